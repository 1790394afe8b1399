package fence

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Header is the HTTP header that carries a fence: "<resource> <fence>",
// the resource percent-encoded as a URL path segment is (so it has no
// space, and any lock key fits), then one space, then the fence in
// decimal:
//
//	Zerotal-Fence: invoice%2F123 4711
//
// A request carries it to say which holder sends it; a 412 answer carries
// the highest fence seen, in the same form.
const Header = "Zerotal-Fence"

// FormatHeader is the Header value for resource and fence.
func FormatHeader(resource string, fence uint64) string {
	return url.PathEscape(resource) + " " + strconv.FormatUint(fence, 10)
}

// ParseHeader reads a Header value. Its error matches ErrInvalid.
func ParseHeader(v string) (resource string, fence uint64, err error) {
	enc, num, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok {
		return "", 0, fmt.Errorf("%w: %s header %q: want \"<resource> <fence>\"", ErrInvalid, Header, v)
	}
	if resource, err = url.PathUnescape(enc); err != nil {
		return "", 0, fmt.Errorf("%w: %s header %q: the resource is not percent-encoded", ErrInvalid, Header, v)
	}
	if fence, err = strconv.ParseUint(strings.TrimSpace(num), 10, 64); err != nil {
		return "", 0, fmt.Errorf("%w: %s header %q: the fence is not a decimal number", ErrInvalid, Header, v)
	}
	if err := validate(resource, fence); err != nil {
		return "", 0, err
	}
	return resource, fence, nil
}
