package goname

import (
	"strings"
	"unicode"
)

// initialisms are written in upper case in Go names: the list golint and
// staticcheck's ST1003 use, plus a few common in tool contracts (KB, SKU,
// SMS). A plural of one keeps its s in lower case: IDs, URLs.
var initialisms = map[string]bool{
	"acl": true, "api": true, "ascii": true, "cpu": true, "css": true, "db": true, "dns": true,
	"eof": true, "guid": true, "html": true, "http": true, "https": true, "id": true, "ip": true,
	"json": true, "kb": true, "lhs": true, "qps": true, "ram": true, "rhs": true, "rpc": true,
	"sku": true, "sla": true, "sms": true, "smtp": true, "sql": true, "ssh": true, "tcp": true,
	"tls": true, "ttl": true, "udp": true, "ui": true, "uid": true, "uri": true, "url": true,
	"utf8": true, "uuid": true, "vm": true, "xml": true, "xmpp": true, "xsrf": true, "xss": true,
}

// Exported turns a manifest name (snake_case, kebab-case, dotted) into an
// exported Go identifier: customer_id -> CustomerID, order_ids -> OrderIDs,
// send_sms -> SendSMS, callback_url -> CallbackURL.
// A name that starts with a digit gets an X in front; a name with no letter
// or digit gives "".
func Exported(s string) string {
	words := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	var b strings.Builder
	for _, w := range words {
		lw := strings.ToLower(w)
		switch {
		case initialisms[lw]:
			b.WriteString(strings.ToUpper(lw))
		case len(lw) > 2 && strings.HasSuffix(lw, "s") && initialisms[lw[:len(lw)-1]]:
			b.WriteString(strings.ToUpper(lw[:len(lw)-1]) + "s")
		default:
			r := []rune(w)
			r[0] = unicode.ToUpper(r[0])
			b.WriteString(string(r))
		}
	}
	out := b.String()
	if out != "" && unicode.IsDigit([]rune(out)[0]) {
		out = "X" + out
	}
	return out
}
