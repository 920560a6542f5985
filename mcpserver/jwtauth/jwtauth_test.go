package jwtauth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/beam-agents/toolreg/internal/oauthtest"
	"github.com/beam-agents/toolreg/mcpserver/jwtauth"
)

const resource = "https://mcp.example.test/mcp"

func newVerifier(t *testing.T, iss *oauthtest.Issuer) *jwtauth.Verifier {
	t.Helper()
	v, err := jwtauth.New(context.Background(), jwtauth.Config{Issuer: iss.URL, Audience: resource, JWKSURL: iss.JWKSURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v
}

func TestAValidTokenGrantsItsSubjectAndScopes(t *testing.T) {
	t.Parallel()
	iss := oauthtest.Start(t)
	v := newVerifier(t, iss)
	info, err := v.Verify(context.Background(), iss.Token(t, iss.Claims("ana", resource, "orders:read", "orders:refund")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.UserID != "ana" || strings.Join(info.Scopes, " ") != "orders:read orders:refund" || time.Until(info.Expiration) < 50*time.Minute || info.Extra["client_id"] != "test-client" {
		t.Fatalf("token info %+v", info)
	}
	if n := iss.JWKSFetches.Load(); n != 1 {
		t.Fatalf("the key set was fetched %d times, want once, at New", n)
	}
}

// Every hostile token is refused with its own reason, as an
// auth.ErrInvalidToken (401), and none grants anything.
func TestHostileTokensAreEachRefusedWithTheirOwnReason(t *testing.T) {
	t.Parallel()
	iss := oauthtest.Start(t)
	v := newVerifier(t, iss)
	good := func() jwt.MapClaims { return iss.Claims("ana", resource, "orders:refund") }
	with := func(k string, val any) jwt.MapClaims {
		c := good()
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return c
	}
	for _, c := range []struct {
		name  string
		token string
		want  error
	}{
		{"expired", iss.Token(t, with("exp", time.Now().Add(-time.Hour).Unix())), jwtauth.ErrExpired},
		{"not valid yet", iss.Token(t, with("nbf", time.Now().Add(time.Hour).Unix())), jwtauth.ErrNotYetValid},
		{"issued in the future", iss.Token(t, with("iat", time.Now().Add(time.Hour).Unix())), jwtauth.ErrNotYetValid},
		{"no expiry", iss.Token(t, with("exp", nil)), jwtauth.ErrMissingClaim},
		{"another audience", iss.Token(t, with("aud", "https://other.example.test/mcp")), jwtauth.ErrAudience},
		{"no audience", iss.Token(t, with("aud", nil)), jwtauth.ErrMissingClaim},
		{"another issuer", iss.Token(t, with("iss", "https://evil.example.test")), jwtauth.ErrIssuer},
		{"alg none", iss.NoneToken(t, good()), jwtauth.ErrAlgorithm},
		{"HMAC signed with the issuer's public key", iss.PublicKeyHMACToken(t, good()), jwtauth.ErrAlgorithm},
		{"signed by another key under the issuer's key id", iss.ForeignToken(t, good()), jwtauth.ErrSignature},
		{"a key id the set does not hold", iss.TokenWithKID(t, good(), "no-such-key"), jwtauth.ErrUnknownKey},
		{"no subject", iss.Token(t, with("sub", nil)), jwtauth.ErrMissingClaim},
		{"the scope as a list", iss.Token(t, with("scope", []string{"orders:refund"})), jwtauth.ErrScopeClaim},
		{"not a JWT", "opaque-token-value", jwtauth.ErrMalformed},
		{"a JWT with its payload cut", strings.Join(strings.Split(iss.Token(t, good()), ".")[:2], ".") + ".", jwtauth.ErrSignature},
	} {
		t.Run(c.name, func(t *testing.T) {
			info, err := v.Verify(context.Background(), c.token, nil)
			if info != nil {
				t.Fatalf("the token was accepted: %+v", info)
			}
			var je *jwtauth.Error
			if !errors.As(err, &je) || !errors.Is(err, c.want) || !errors.Is(err, auth.ErrInvalidToken) {
				t.Fatalf("Verify = %v; want a *jwtauth.Error for %v that is auth.ErrInvalidToken", err, c.want)
			}
		})
	}
}

// Scopes in any other claim than scope are not scopes: the token is valid,
// and grants none.
func TestScopesInAnotherClaimAreNotScopes(t *testing.T) {
	t.Parallel()
	iss := oauthtest.Start(t)
	v := newVerifier(t, iss)
	c := iss.Claims("ana", resource)
	c["scp"] = []string{"orders:refund"}
	c["roles"] = "orders:refund"
	info, err := v.Verify(context.Background(), iss.Token(t, c), nil)
	if err != nil || len(info.Scopes) != 0 {
		t.Fatalf("Verify = %+v, %v; want a valid token with no scopes", info, err)
	}
}

func TestNewRefusesWhatItCannotVerifyWith(t *testing.T) {
	t.Parallel()
	iss := oauthtest.Start(t)
	for _, c := range []struct {
		name string
		cfg  jwtauth.Config
		want string
	}{
		{"no audience", jwtauth.Config{Issuer: iss.URL, JWKSURL: iss.JWKSURL}, "Audience"},
		{"a symmetric algorithm", jwtauth.Config{Issuer: iss.URL, Audience: resource, JWKSURL: iss.JWKSURL, Algorithms: []string{"RS256", "HS256"}}, `"HS256"`},
		{"a key set that is not there", jwtauth.Config{Issuer: iss.URL, Audience: resource, JWKSURL: iss.URL + "/missing"}, "fetching the key set"},
	} {
		if _, err := jwtauth.New(context.Background(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, want an error naming %s", c.name, err, c.want)
		}
	}
}
