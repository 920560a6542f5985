package faultproxy

import (
	"bufio"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echo starts a server that writes back each line it reads.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return c, bufio.NewReader(c)
}

func TestProxy(t *testing.T) {
	t.Parallel()
	target := echo(t)
	var seen atomic.Int64
	p := Start(t, target, func(c *Conn, fromClient bool, b []byte) {
		seen.Add(int64(len(b)))
		switch {
		case fromClient && strings.Contains(string(b), "mute"):
			c.Mute()
		case fromClient && strings.Contains(string(b), "cut"):
			c.Close()
		}
	})

	// Forwarded both ways, each chunk shown to the hook first.
	c, r := dial(t, p.Addr())
	io.WriteString(c, "hello\n")
	if line, err := r.ReadString('\n'); line != "hello\n" || err != nil {
		t.Fatalf("read %q, %v; want the echo", line, err)
	}
	if got := seen.Load(); got != 12 {
		t.Errorf("the hook saw %d bytes, want 12 (6 each way)", got)
	}

	// Muted: the request reaches the server, its answer is dropped.
	c, r = dial(t, p.Addr())
	io.WriteString(c, "mute\n")
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if line, err := r.ReadString('\n'); line != "" || err == nil {
		t.Errorf("a muted connection read %q, %v; want nothing", line, err)
	}

	// Cut: the client reads an end of file.
	c, r = dial(t, p.Addr())
	io.WriteString(c, "cut\n")
	if line, err := r.ReadString('\n'); line != "" || err != io.EOF {
		t.Errorf("a cut connection read %q, %v; want EOF", line, err)
	}
}
