package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/zerotal/lock/cluster"
	"github.com/zerotal/lock/cluster/access"
)

// readSecretFile fills --raft-secret from --raft-secret-file.
func (o *agentOptions) readSecretFile() error {
	if o.raftSecretFile == "" {
		return nil
	}
	if o.raftSecret != "" {
		return usagef("--raft-secret and --raft-secret-file are exclusive")
	}
	b, err := os.ReadFile(o.raftSecretFile)
	if err != nil {
		return usagef("--raft-secret-file: %v", err)
	}
	o.raftSecret = strings.TrimSpace(string(b))
	if o.raftSecret == "" {
		return usagef("--raft-secret-file: %s is empty", o.raftSecretFile)
	}
	return nil
}

// readTokens reads --token-file; nil without one.
func (o *agentOptions) readTokens() (*access.Set, error) {
	if o.tokenFile == "" {
		return nil, nil
	}
	set, err := access.ParseFile(o.tokenFile)
	if err != nil {
		return nil, usagef("--token-file: %v", err)
	}
	return set, nil
}

// serveUntilStopped waits for ctx (SIGINT, SIGTERM) or the node's removal
// from the cluster, reading the token file again on every SIGHUP (a file
// that fails to parse keeps the credentials in force, and says why). It
// reports whether the node was removed.
func serveUntilStopped(ctx context.Context, node *cluster.Node, o *agentOptions, logger *slog.Logger) bool {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return false
		case <-node.Removed():
			logger.Error("this node was removed from the cluster: exiting", "id", o.id)
			return true
		case <-hup:
			if o.tokenFile == "" {
				logger.Info("SIGHUP: no --token-file to read again")
				continue
			}
			set, err := access.ParseFile(o.tokenFile)
			if err == nil {
				err = node.ReloadTokens(set)
			}
			if err != nil {
				logger.Error("SIGHUP: token file not reloaded; the credentials in force stay", "error", err)
				continue
			}
			logger.Info("SIGHUP: token file reloaded", "file", o.tokenFile, "credentials", set.Len())
		}
	}
}
