package natsstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// URL is a store's address: the servers to connect to, the credentials
// to connect with and the bucket, as ParseURL reads them from
//
//	nats://[user[:password]@]host[:port][,host[:port]...]/bucket
//
// (tls:// for a TLS connection). Its String never shows the password.
type URL struct {
	Scheme   string   // "nats" or "tls"
	Hosts    []string // host:port, the port 4222 if none was given
	User     string
	Password string
	Bucket   string
}

// ParseURL reads a store URL. Its errors name what is wrong and where, and
// never hold the password.
func ParseURL(raw string) (URL, error) {
	var u URL
	bad := func(format string, args ...any) error {
		return fmt.Errorf("natsstore: store URL %s: %s", redactRaw(raw), fmt.Sprintf(format, args...))
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || (scheme != "nats" && scheme != "tls") {
		return u, bad("want nats://host:port/bucket (or tls://)")
	}
	u.Scheme = scheme
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		return u, bad("a store URL takes no query ('?') nor fragment ('#')")
	}
	authority, path, ok := strings.Cut(rest, "/")
	if !ok || path == "" {
		return u, bad("no bucket: put its name after the hosts, as in nats://localhost:4222/toolreg")
	}
	if strings.Contains(path, "/") {
		return u, bad("the path holds more than the bucket's name: want nats://host:port/bucket")
	}
	b, err := url.PathUnescape(path)
	if err != nil {
		return u, bad("the bucket's name is not a valid escape")
	}
	if checkBucket(b) != nil {
		return u, bad("the bucket's name is not one JetStream takes: use 1 to 64 letters, digits, '_' and '-'")
	}
	u.Bucket = b
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		info := authority[:at]
		authority = authority[at+1:]
		user, pass, hasPass := strings.Cut(info, ":")
		if u.User, err = url.PathUnescape(user); err != nil {
			return u, bad("the user name is not a valid escape")
		}
		if hasPass {
			if u.Password, err = url.PathUnescape(pass); err != nil {
				return u, bad("the password is not a valid escape")
			}
		}
		if u.User == "" {
			return u, bad("an empty user name before '@'")
		}
	}
	if authority == "" {
		return u, bad("no host: want nats://host:port/bucket")
	}
	hosts := strings.Split(authority, ",")
	for i, h := range hosts {
		hp, err := hostPort(h)
		if err != nil {
			return u, bad("host %d of %d: %v", i+1, len(hosts), err)
		}
		u.Hosts = append(u.Hosts, hp)
	}
	return u, nil
}

// hostPort checks one host[:port] and returns it with its port.
func hostPort(h string) (string, error) {
	host, port := h, "4222"
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", errors.New("an IPv6 address without its closing ']'")
		}
		host = h[1:end]
		if rest := h[end+1:]; rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return "", errors.New("want ':' and a port after ']'")
			}
			port = p
		}
		if host == "" || strings.Trim(host, "0123456789abcdefABCDEF:.") != "" {
			return "", errors.New("not an IPv6 address")
		}
		host = "[" + host + "]"
	} else {
		if i := strings.LastIndexByte(h, ':'); i >= 0 {
			host, port = h[:i], h[i+1:]
		}
		if host == "" {
			return "", errors.New("an empty host name")
		}
		for _, r := range host {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
				return "", errors.New("the host name holds a character other than letters, digits, '.', '-' and '_'")
			}
		}
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", errors.New("the port is not a number from 1 to 65535")
	}
	return host + ":" + port, nil
}

// String returns the URL with its password, if any, shown as "xxxxx".
func (u URL) String() string {
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if u.User != "" {
		b.WriteString(url.PathEscape(u.User))
		if u.Password != "" {
			b.WriteString(":xxxxx")
		}
		b.WriteString("@")
	}
	b.WriteString(strings.Join(u.Hosts, ","))
	b.WriteString("/" + url.PathEscape(u.Bucket))
	return b.String()
}

// Servers returns the hosts as nats.Connect takes them, without credentials.
func (u URL) Servers() string {
	s := make([]string, len(u.Hosts))
	for i, h := range u.Hosts {
		s[i] = u.Scheme + "://" + h
	}
	return strings.Join(s, ",")
}

// redactRaw shows a URL ParseURL could not read with whatever may be a
// password hidden: the user information after its first ':', text after a
// ':' in a host that is not a port, and a path that is not a bucket's name
// (a password with a '/' puts the rest of the URL there).
func redactRaw(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "(not shown: it is not a URL, and may hold a password)"
	}
	authority, path, hasPath := strings.Cut(rest, "/")
	var b strings.Builder
	b.WriteString(scheme + "://")
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		user, _, hasPass := strings.Cut(authority[:at], ":")
		b.WriteString(user)
		if hasPass {
			b.WriteString(":xxxxx")
		}
		b.WriteString("@")
		authority = authority[at+1:]
	}
	for i, h := range strings.Split(authority, ",") {
		if i > 0 {
			b.WriteString(",")
		}
		if c := strings.LastIndexByte(h, ':'); c >= 0 && strings.Trim(h[c+1:], "0123456789") != "" && !strings.HasSuffix(h, "]") {
			h = h[:strings.IndexByte(h, ':')] + ":xxxxx"
		}
		b.WriteString(h)
	}
	if hasPath {
		if checkBucket(path) == nil {
			b.WriteString("/" + path)
		} else {
			b.WriteString("/(path not shown)")
		}
	}
	return strconv.Quote(b.String())
}

// OpenURL connects to the servers of the store URL raw (see ParseURL) and
// opens the store on its bucket with opts; close closes the connection.
// The errors name the servers, never the password.
func OpenURL(ctx context.Context, raw string, opts ...Option) (s *Store, close func(), err error) {
	u, err := ParseURL(raw)
	if err != nil {
		return nil, nil, err
	}
	copts := []nats.Option{nats.Name("toolreg"), nats.Timeout(5 * time.Second), nats.MaxReconnects(-1)}
	if u.User != "" {
		copts = append(copts, nats.UserInfo(u.User, u.Password))
	}
	nc, err := nats.Connect(u.Servers(), copts...)
	if err != nil {
		return nil, nil, fmt.Errorf("natsstore: connecting to %s: %w", u.Servers(), err)
	}
	// A batch's creates are asynchronous publishes: the timeout frees one
	// never answered (sent while a stream had no leader).
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(time.Minute))
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("natsstore: %s: %w", u.Servers(), err)
	}
	s, err = Open(ctx, js, u.Bucket, opts...)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return s, nc.Close, nil
}
