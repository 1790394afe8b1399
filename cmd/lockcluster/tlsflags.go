package main

import "github.com/spf13/cobra"

// clientTLSFlags are the flags that let a client command reach a TLS
// cluster, and check the cluster's ID.
type clientTLSFlags struct {
	ca, cert, key string
	clusterID     string
}

func (f *clientTLSFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.ca, "tls-ca", "", "TLS cluster: PEM `file` of the CA that signs the nodes' certificates; a bare host:port\nthen means https")
	fs.StringVar(&f.cert, "tls-cert", "", "mutual TLS: PEM client certificate `file`")
	fs.StringVar(&f.key, "tls-key", "", "mutual TLS: PEM key `file` of --tls-cert")
	fs.StringVar(&f.clusterID, "cluster-id", "", "refuse nodes of another cluster than this one (default: no check)")
}
