package redis

import (
	"net/url"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
)

// parseURL turns a redis:// or rediss:// URL into client options. Its
// errors never contain the password: url.Parse quotes the whole input in
// its errors, and some of its messages quote a piece of the authority, so
// nothing of a URL that does not parse is repeated; later errors are
// scrubbed of the password and name the URL only in its redacted form.
func parseURL(raw string) (*goredis.Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &drivers.InvalidError{
			Field:  "redis URL",
			Reason: "cannot be parsed (not shown, it may hold a password; special characters in the password must be percent-encoded)",
		}
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, &drivers.InvalidError{
			Field:  "redis URL",
			Reason: "scheme must be redis:// or rediss:// in " + u.Redacted(),
		}
	}
	if u.Host == "" {
		return nil, &drivers.InvalidError{Field: "redis URL", Reason: "no host in " + u.Redacted()}
	}
	opts, err := goredis.ParseURL(raw)
	if err != nil {
		return nil, &drivers.InvalidError{
			Field:  "redis URL",
			Reason: scrub(err.Error(), u) + " in " + u.Redacted(),
		}
	}
	return opts, nil
}

// redactedAddr is the URL for messages: scheme, host and database, with the
// password replaced.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// scrub removes the URL's password from msg, in case a message quotes it.
func scrub(msg string, u *url.URL) string {
	if u.User == nil {
		return msg
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, pw, "xxxxx")
	if escaped := url.QueryEscape(pw); escaped != pw {
		msg = strings.ReplaceAll(msg, escaped, "xxxxx")
	}
	return msg
}

// hasQueryOption reports whether the URL sets the query option name.
func hasQueryOption(raw, name string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Query().Has(name)
}
