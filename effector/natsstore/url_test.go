package natsstore_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg/effector/natsstore"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		raw  string
		want natsstore.URL
		str  string
	}{
		{"nats://localhost:4222/toolreg", natsstore.URL{Scheme: "nats", Hosts: []string{"localhost:4222"}, Bucket: "toolreg"}, "nats://localhost:4222/toolreg"},
		{"nats://h1,h2:5000,[::1]:7/b_1-x", natsstore.URL{Scheme: "nats", Hosts: []string{"h1:4222", "h2:5000", "[::1]:7"}, Bucket: "b_1-x"}, "nats://h1:4222,h2:5000,[::1]:7/b_1-x"},
		{"tls://ana:p%40ss%2Fw0rd@10.0.0.1/dedup", natsstore.URL{Scheme: "tls", Hosts: []string{"10.0.0.1:4222"}, User: "ana", Password: "p@ss/w0rd", Bucket: "dedup"}, "tls://ana:xxxxx@10.0.0.1:4222/dedup"},
		{"nats://ana@h/b", natsstore.URL{Scheme: "nats", Hosts: []string{"h:4222"}, User: "ana", Bucket: "b"}, "nats://ana@h:4222/b"},
	} {
		t.Run(tt.raw, func(t *testing.T) {
			u, err := natsstore.ParseURL(tt.raw)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, u); diff != "" {
				t.Fatalf("(-want +got)\n%s", diff)
			}
			if u.String() != tt.str {
				t.Fatalf("String() = %q, want %q", u.String(), tt.str)
			}
		})
	}
}

// Bad URLs are refused with an error that says what is wrong, and never
// shows the password, wherever a mistake put it.
func TestParseURLRefusesWithoutShowingThePassword(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ raw, want string }{
		{"redis://h/b", "want nats://host:port/bucket"},
		{"nats://h:4222", "no bucket"},
		{"nats://h:4222/", "no bucket"},
		{"nats://h/a/b", "more than the bucket"},
		{"nats://h/a.b", "not one JetStream takes"},
		{"nats://h:0/b", "host 1 of 1: the port is not a number"},
		{"nats://h:99999/b", "the port is not a number"},
		{"nats://h,h2:x/b", "host 2 of 2"},
		{"nats:///b", "no host"},
		{"nats://h/b?x=1", "no query"},
		{"nats://[::1/b", "closing ']'"},
		{"nats://h h/b", "host name holds a character"},
		{"nats://:pw@h/b", "empty user name"},
		// The password where a mistake put it: a missing host, a '/' in
		// it, a missing '@'.
		{"nats://ana:Hunter2Secret/b", "port is not a number"},
		{"nats://ana:Hunter2/Secret@h/b", ""},
		{"nats://ana:Hunter2Secret@/b", "no host"},
		{"nats://ana:Hunter2Secret@h/b?pw=Hunter2Secret", "no query"},
		{"ana:Hunter2Secret@h/b", "want nats://"},
	} {
		t.Run(tt.raw, func(t *testing.T) {
			_, err := natsstore.ParseURL(tt.raw)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "Hunter2") || strings.Contains(err.Error(), "Secret") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

// FuzzParseURL: whatever the input, ParseURL does not panic; a URL it
// reads prints (String) without its password and reads back the same but
// for the password; and neither an error nor String shows a password
// given in the user information, wherever the rest of the URL breaks.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"localhost:4222/toolreg", "h1,h2:5000,[::1]:7/b", "h/b?x", "[::1/b", ":0/b", "/", "h/a/b", "a@b@c/d"} {
		f.Add("ana", "pw", s)
	}
	f.Fuzz(func(t *testing.T, user, pass, rest string) {
		const marker = "QzX9secret"
		raw := "nats://" + user + ":" + marker + pass + "@" + rest
		u, err := natsstore.ParseURL(raw)
		if err != nil {
			if strings.Contains(err.Error(), marker) {
				t.Fatalf("ParseURL(%q): error %q shows the password", raw, err)
			}
			return
		}
		if strings.Contains(u.String(), marker) {
			t.Fatalf("ParseURL(%q).String() = %q shows the password", raw, u.String())
		}
		// String hides the password: put it back, and the URL reads the same.
		back := u
		back.Password = ""
		again, err := natsstore.ParseURL(u.String())
		if u.Password == "" {
			if err != nil {
				t.Fatalf("ParseURL(String()) of %q: %v", raw, err)
			}
			if diff := cmp.Diff(back, again); diff != "" {
				t.Fatalf("round trip of %q (-want +got)\n%s", raw, diff)
			}
		}
		// And any raw input at all does not panic.
		natsstore.ParseURL(rest)
	})
}
