package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/zerotal/lock"
)

// clientTLSFlags are the flags that let a client command reach a TLS
// cluster, and check the cluster's ID.
type clientTLSFlags struct {
	ca, cert, key string
	clusterID     string
}

func (f *clientTLSFlags) register(fs *flagSet, e *env) {
	fs.StringVar(&f.ca, "tls-ca", envOr(e, "", lock.EnvClusterCA),
		"TLS cluster: PEM file of the CA that signs the nodes' certificates; a bare host:port then means https (env LOCK_CLUSTER_CA)")
	fs.StringVar(&f.cert, "tls-cert", envOr(e, "", lock.EnvClusterCert),
		"mutual TLS: PEM client certificate (env LOCK_CLUSTER_CERT)")
	fs.StringVar(&f.key, "tls-key", envOr(e, "", lock.EnvClusterKey),
		"mutual TLS: PEM key of --tls-cert (env LOCK_CLUSTER_KEY)")
	fs.StringVar(&f.clusterID, "cluster-id", envOr(e, "", lock.EnvClusterID),
		"refuse nodes of another cluster than this one (env LOCK_CLUSTER_ID; default: no check)")
}

// envBool is envOr for booleans; a malformed value is an error.
func envBool(e *env, def bool, name string) (bool, error) {
	v := strings.TrimSpace(e.getenv(name))
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s: %q is not a boolean", name, v)
	}
	return b, nil
}
