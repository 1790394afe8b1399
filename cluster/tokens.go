package cluster

import (
	"errors"

	"github.com/zerotal/lock/cluster/access"
)

// TokenSet is the API's credentials with their roles and prefixes (see
// package access: access.ParseFile reads a token file).
type TokenSet = access.Set

// ReloadTokens makes tokens the API's credentials from the next request
// on (Config.Token stays beside them as an operator), on open streams
// too: a token no longer in the set is refused at its next request.
// lockcluster agent calls it on SIGHUP with its token file read anew.
// nil on a node that has no Config.Token and started without Tokens
// leaves its API open to every request; on any other node it leaves
// Config.Token alone (a node never opens its API by a reload).
func (n *Node) ReloadTokens(tokens *TokenSet) error {
	set := tokens
	if set == nil && n.creds.Load() != nil {
		set = access.NewSet()
	}
	if n.cfg.Token != "" {
		var err error
		if set, err = tokens.WithOperator("--token", n.cfg.Token); err != nil {
			return errors.New("cluster: tokens: " + err.Error())
		}
	}
	n.creds.Store(set)
	n.log.Info("API credentials loaded", "credentials", set.Len(), "open", set == nil)
	return nil
}
