package integration

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/zerotal/lock/cluster/access"
)

// Every cluster of this suite runs as production does: raft behind its
// own secret, the API behind a token file with roles. The workloads and
// the lockcluster commands they start use the client token (which holds
// no right over membership or other owners' locks), the admin commands
// the operator token.
const (
	raftSecret    = "integration-raft-secret-0123456789"
	clientToken   = "integration-client-token-0123456789"
	operatorToken = "integration-operator-token-0123456789"
	metricsToken  = "integration-metrics-token-0123456789"
	// teamToken is a client confined to keys under ui/team/ (the lock
	// page's test).
	teamToken = "integration-team-token-0123456789"
)

// writeTokenFile writes the suite's token file into dir and returns its
// path.
func writeTokenFile(dir string) (string, error) {
	path := filepath.Join(dir, "tokens")
	body := fmt.Sprintf("# the integration suite's credentials\nworkers client * sha256:%s\nops operator * sha256:%s\nscraper metrics - sha256:%s\nteam client ui/team/ sha256:%s\n",
		access.HashToken(clientToken), access.HashToken(operatorToken), access.HashToken(metricsToken), access.HashToken(teamToken))
	return path, os.WriteFile(path, []byte(body), 0o600)
}
