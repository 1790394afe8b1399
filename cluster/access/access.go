// Package access is who may do what on a node's HTTP API: credentials
// (bearer tokens and TLS client certificates), the role of each, the key
// prefixes it is confined to, and the token file they are read from.
//
// A role is a set of rights. Three roles exist:
//
//	client    lock (acquire, release, extend, get, list, the stream), status
//	operator  every right: lock, status, force-release, membership (join,
//	          leave), debug (/debug/), metrics
//	metrics   metrics (/metrics) only: a scraper holds no lock rights
//
// A credential's prefixes confine its key rights (lock, force-release) to
// keys that start with one of them; "*" is every key. Membership, status,
// debug and metrics are not about keys and ignore the prefixes.
package access

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// Right is one thing a request may need.
type Right string

// The rights, named as refusals name them.
const (
	RightLock         Right = "lock"
	RightStatus       Right = "status"
	RightForceRelease Right = "force-release"
	RightMembership   Right = "membership"
	RightDebug        Right = "debug"
	RightMetrics      Right = "metrics"
)

// Role names a set of rights.
type Role string

// The roles.
const (
	RoleClient   Role = "client"
	RoleOperator Role = "operator"
	RoleMetrics  Role = "metrics"
)

var rights = map[Role][]Right{
	RoleClient:   {RightLock, RightStatus},
	RoleOperator: {RightLock, RightStatus, RightForceRelease, RightMembership, RightDebug, RightMetrics},
	RoleMetrics:  {RightMetrics},
}

// Roles lists the roles, for messages and help.
func Roles() []Role { return []Role{RoleClient, RoleOperator, RoleMetrics} }

// Credential is one named credential: its role and, when confined, the
// key prefixes its key rights reach.
type Credential struct {
	// Name names the credential in logs and refusals; never a secret.
	Name string
	Role Role
	// Prefixes confine the key rights; nil: every key.
	Prefixes []string
	// Subject is the certificate common name that admits the credential
	// ("cn:" in the token file); "": a token does.
	Subject string
}

// Can reports whether the credential has right r.
func (c *Credential) Can(r Right) bool { return slices.Contains(rights[c.Role], r) }

// CoversKey reports whether key lies within the credential's prefixes.
func (c *Credential) CoversKey(key string) bool {
	if c.Prefixes == nil {
		return true
	}
	for _, p := range c.Prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// CoversPrefix reports whether every key that starts with prefix lies
// within the credential's prefixes (a list under prefix may be shown).
func (c *Credential) CoversPrefix(prefix string) bool { return c.CoversKey(prefix) }

// Scope describes the prefixes for a message: "every key" or the list.
func (c *Credential) Scope() string {
	if c.Prefixes == nil {
		return "every key"
	}
	return "keys under " + strings.Join(quoteAll(c.Prefixes), ", ")
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// Open is the credential of every request on a node without credentials:
// every right, every key.
var Open = &Credential{Name: "anonymous (no credentials configured)", Role: RoleOperator}

// Set is the credentials a node accepts. It is immutable once built;
// a reload builds a new one.
type Set struct {
	byHash    map[[sha256.Size]byte]*Credential
	bySubject map[string]*Credential
	names     map[string]*Credential
}

// NewSet returns an empty set.
func NewSet() *Set {
	return &Set{byHash: map[[sha256.Size]byte]*Credential{}, bySubject: map[string]*Credential{}, names: map[string]*Credential{}}
}

// Len is the number of credentials.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.names)
}

// ByToken is the credential of a bearer token, or nil. Tokens are held
// as SHA-256 digests only, and looked up by the digest of the one
// presented.
func (s *Set) ByToken(token string) *Credential {
	if s == nil || token == "" {
		return nil
	}
	return s.byHash[sha256.Sum256([]byte(token))]
}

// BySubject is the credential of a verified client certificate whose
// subject common name is cn, or nil.
func (s *Set) BySubject(cn string) *Credential {
	if s == nil || cn == "" {
		return nil
	}
	return s.bySubject[cn]
}

// ByName is the credential named name, or nil.
func (s *Set) ByName(name string) *Credential {
	if s == nil {
		return nil
	}
	return s.names[name]
}

// WithOperator returns a copy of s with one more credential: an operator
// named name with token, confined to no prefix (a node's single --token).
func (s *Set) WithOperator(name, token string) (*Set, error) {
	out := NewSet()
	if s != nil {
		for k, v := range s.byHash {
			out.byHash[k] = v
		}
		for k, v := range s.bySubject {
			out.bySubject[k] = v
		}
		for k, v := range s.names {
			out.names[k] = v
		}
	}
	if c := out.ByToken(token); c != nil {
		// The file names the same token: fine when it gives it the same
		// rights, a contradiction otherwise.
		if c.Role != RoleOperator || c.Prefixes != nil {
			return nil, fmt.Errorf("the operator token %s is also credential %q, a %s for %s: give it one role", name, c.Name, c.Role, c.Scope())
		}
		return out, nil
	}
	if err := out.add(&Credential{Name: name, Role: RoleOperator}, "sha256:"+HashToken(token)); err != nil {
		return nil, err
	}
	return out, nil
}

// add records c under its reference: "sha256:<hex digest of the token>"
// or "cn:<certificate common name>".
func (s *Set) add(c *Credential, ref string) error {
	if s.names[c.Name] != nil {
		return fmt.Errorf("credential name %q is used twice", c.Name)
	}
	kind, val, ok := strings.Cut(ref, ":")
	switch {
	case !ok || val == "":
	case kind == "sha256":
		b, err := hex.DecodeString(val)
		if err != nil || len(b) != sha256.Size {
			return fmt.Errorf("%q is not a SHA-256 digest in hex (64 characters; lockcluster token prints one)", ref)
		}
		d := [sha256.Size]byte(b)
		if _, dup := s.byHash[d]; dup {
			return fmt.Errorf("credential %q has the same token as another", c.Name)
		}
		s.byHash[d] = c
		s.names[c.Name] = c
		return nil
	case kind == "cn":
		if _, dup := s.bySubject[val]; dup {
			return fmt.Errorf("credential %q names certificate subject %q, as another does", c.Name, val)
		}
		c.Subject = val
		s.bySubject[val] = c
		s.names[c.Name] = c
		return nil
	}
	return fmt.Errorf("%q must be sha256:<hex digest of the token> or cn:<client certificate common name>", ref)
}

// HashToken is the hex SHA-256 digest of token, as the token file holds
// it (after "sha256:").
func HashToken(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}
