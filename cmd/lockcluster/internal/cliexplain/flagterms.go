package cliexplain

import "strings"

// inFlagTerms rewrites the library's words for a setting (Go field names:
// ID, DataDir, CAFile, Config.RaftSecret ...) into the command line's
// flags, so that a message tells a user of lockcluster what to type.
var inFlagTerms = strings.NewReplacer(
	"ID is required", "--id is required",
	"DataDir is required", "--data-dir is required",
	"set RaftAdvertise to", "pass --raft-advertise with",
	"set HTTPAdvertise to", "pass --http-advertise with",
	"RaftAdvertise", "--raft-advertise",
	"HTTPAdvertise", "--http-advertise",
	"Config.RaftSecret, ", "",
	"Config.TLS, ", "",
	"set Config.RaftInsecure (--raft-insecure)", "pass --raft-insecure",
	"TLS needs both CertFile and KeyFile", "TLS needs both --tls-cert and --tls-key",
	"TLS needs CAFile,", "TLS needs --tls-ca,",
	"set CAFile (LOCKCLUSTER_TLS_CA)", "pass --tls-ca (LOCKCLUSTER_TLS_CA)",
	"set CAFile, LOCKCLUSTER_TLS_CA", "pass --tls-ca or set LOCKCLUSTER_TLS_CA",
	"set CertFile and KeyFile, LOCKCLUSTER_TLS_CERT and LOCKCLUSTER_TLS_KEY", "pass --tls-cert and --tls-key (LOCKCLUSTER_TLS_CERT, LOCKCLUSTER_TLS_KEY)",
	"set Token, LOCKCLUSTER_TOKEN", "pass --token or set LOCKCLUSTER_TOKEN",
)

// InFlagTerms is msg in the command line's terms: flag names for the
// library's field names, and no "cluster: " stutter at the start of each
// line of a joined error.
func InFlagTerms(msg string) string {
	lines := strings.Split(inFlagTerms.Replace(msg), "\n")
	for i, l := range lines {
		for _, p := range []string{"cluster: ", "client: ", "lock: "} {
			l = strings.TrimPrefix(l, p)
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}
