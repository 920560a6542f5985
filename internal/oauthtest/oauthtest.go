// Package oauthtest is an OAuth 2.1 authorization server for tests, in
// process: it serves its JSON Web Key Set and its metadata (RFC 8414) over
// HTTP, and mints RS256 access tokens (RFC 9068) for the claims a test
// gives, so that a resource's verifier fetches real keys over the network
// and checks real signatures. It also mints the hostile tokens the tests
// try.
package oauthtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer is a running authorization server.
type Issuer struct {
	// URL is its issuer identifier; JWKSURL where its key set is served.
	URL, JWKSURL string
	// KID is the key id its tokens name.
	KID string
	key *rsa.PrivateKey
	// JWKSFetches counts the fetches of the key set.
	JWKSFetches atomic.Int64
}

// Start starts an issuer for the rest of the test.
func Start(t testing.TB) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss := &Issuer{key: key, KID: "test-key-1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		iss.JWKSFetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"keys": []any{jwk(&key.PublicKey, iss.KID)}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss.URL, "jwks_uri": iss.JWKSURL,
			"token_endpoint": iss.URL + "/token", "response_types_supported": []string{"code"}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	iss.URL, iss.JWKSURL = srv.URL, srv.URL+"/jwks"
	return iss
}

// jwk is the public key's JSON Web Key.
func jwk(pub *rsa.PublicKey, kid string) map[string]string {
	b64 := base64.RawURLEncoding.EncodeToString
	return map[string]string{"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
		"n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes())}
}

// Claims are the claims of a valid token for audience: this issuer, sub,
// aud, an hour to live, and the scopes as the scope claim.
func (i *Issuer) Claims(sub, audience string, scopes ...string) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{"iss": i.URL, "sub": sub, "aud": audience, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "client_id": "test-client"}
	if len(scopes) > 0 {
		c["scope"] = strings.Join(scopes, " ")
	}
	return c
}

// Token signs claims with the issuer's key (RS256, naming its key id).
func (i *Issuer) Token(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	return i.TokenWithKID(t, claims, i.KID)
}

// TokenWithKID signs claims with the issuer's key, naming kid as its key id.
func (i *Issuer) TokenWithKID(t testing.TB, claims jwt.MapClaims, kid string) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(i.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// NoneToken is claims with "alg": "none" and no signature.
func (i *Issuer) NoneToken(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodNone, claims)
	tok.Header["kid"] = i.KID
	s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// PublicKeyHMACToken is the key-confusion attack: claims signed HS256 with
// the issuer's public key (its PEM, as published) as the HMAC secret.
func (i *Issuer) PublicKeyHMACToken(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&i.key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	tok.Header["kid"] = i.KID
	s, err := tok.SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ForeignToken is claims signed by another key under the issuer's key id.
func (i *Issuer) ForeignToken(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = i.KID
	s, err := tok.SignedString(other)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
