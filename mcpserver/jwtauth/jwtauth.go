package jwtauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Config says which tokens a Verifier accepts.
type Config struct {
	// Issuer is the iss every token must carry: the authorization server's
	// issuer identifier. Required.
	Issuer string
	// Audience is an aud every token must carry: the resource identifier of
	// the server that verifies it (its URL, RFC 8707). Required.
	Audience string
	// JWKSURL is where the issuer serves its JSON Web Key Set. Required.
	JWKSURL string
	// Algorithms are the signing algorithms accepted. The default is every
	// asymmetric one: RS256, RS384, RS512, PS256, PS384, PS512, ES256,
	// ES384, ES512, EdDSA. A symmetric one (HS256, ...) or "none" is
	// refused: an HMAC key would have to be shared with every resource.
	Algorithms []string
	// Leeway is the clock skew allowed in checking exp, nbf and iat. The
	// default is none.
	Leeway time.Duration
	// HTTPClient fetches the key set. The default is http.DefaultClient.
	HTTPClient *http.Client
}

var asymmetric = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// The reasons a token is refused. An *Error wraps exactly one.
var (
	ErrMalformed    = errors.New("token is not a JWT")
	ErrAlgorithm    = errors.New("token is signed with an algorithm this resource does not accept")
	ErrUnknownKey   = errors.New("token is signed with a key the issuer's key set does not hold")
	ErrSignature    = errors.New("token signature does not verify")
	ErrIssuer       = errors.New("token is from another issuer")
	ErrAudience     = errors.New("token is not for this resource")
	ErrExpired      = errors.New("token is expired")
	ErrNotYetValid  = errors.New("token is not valid yet")
	ErrMissingClaim = errors.New("token lacks a claim this resource requires")
	ErrScopeClaim   = errors.New("token's scope claim is not a space-separated string")
)

// Error is a refused token: Reason is one of the Err values, Detail says
// more. It wraps auth.ErrInvalidToken, so the SDK's auth.RequireBearerToken
// answers 401 with its text.
type Error struct {
	Reason error
	Detail string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return "jwtauth: " + e.Reason.Error()
	}
	return "jwtauth: " + e.Reason.Error() + ": " + e.Detail
}

// Is reports whether target is the reason or auth.ErrInvalidToken.
func (e *Error) Is(target error) bool { return target == e.Reason || target == auth.ErrInvalidToken }

// Verifier verifies tokens against one issuer's key set. It is safe for
// concurrent use.
type Verifier struct {
	cfg    Config
	keys   keyfunc.Keyfunc
	parser *jwt.Parser
	cancel context.CancelFunc
}

// New returns a Verifier of cfg, having fetched the key set once: it fails
// when the key set cannot be fetched or read, rather than refuse every token
// later. Close it to stop refreshing the key set.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	var missing []string
	for _, f := range []struct{ name, v string }{{"Issuer", cfg.Issuer}, {"Audience", cfg.Audience}, {"JWKSURL", cfg.JWKSURL}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("jwtauth: Config lacks %s: name the issuer, this resource's identifier (the audience) and the issuer's key set URL", strings.Join(missing, ", "))
	}
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = asymmetric
	}
	for _, a := range cfg.Algorithms {
		if !slices.Contains(asymmetric, a) {
			return nil, fmt.Errorf("jwtauth: algorithm %q is not accepted: use asymmetric ones (%s); a symmetric key would be every resource's to forge tokens with, and none is no signature", a, strings.Join(asymmetric, ", "))
		}
	}
	refreshCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	noError := false
	kf, err := keyfunc.NewDefaultOverrideCtx(refreshCtx, []string{cfg.JWKSURL}, keyfunc.Override{
		Client: cfg.HTTPClient, NoErrorReturnFirstHTTPReq: &noError, HTTPTimeout: 10 * time.Second,
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("jwtauth: fetching the key set %s: %w", cfg.JWKSURL, err)
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(cfg.Algorithms), jwt.WithIssuer(cfg.Issuer), jwt.WithAudience(cfg.Audience),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(cfg.Leeway),
	}
	return &Verifier{cfg: cfg, keys: kf, parser: jwt.NewParser(opts...), cancel: cancel}, nil
}

// Close stops refreshing the key set.
func (v *Verifier) Close() { v.cancel() }

// Verify verifies token and returns what it grants: its subject as UserID,
// its scope claim's scopes, its expiry, and in Extra its issuer and, when
// it has one, its client_id. Its signature is an auth.TokenVerifier's; req
// is not used.
func (v *Verifier) Verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	if alg, err := headerAlg(token); err != nil {
		return nil, &Error{Reason: ErrMalformed, Detail: err.Error()}
	} else if !slices.Contains(v.cfg.Algorithms, alg) {
		return nil, &Error{Reason: ErrAlgorithm, Detail: fmt.Sprintf("%q; want one of %s", alg, strings.Join(v.cfg.Algorithms, ", "))}
	}
	claims := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(token, claims, v.keys.KeyfuncCtx(ctx))
	if err != nil {
		return nil, refusal(err)
	}
	sub, _ := claims["sub"].(string)
	if sub == "" {
		return nil, &Error{Reason: ErrMissingClaim, Detail: "sub: a token names its subject"}
	}
	var scopes []string
	switch s := claims["scope"].(type) {
	case nil:
	case string:
		scopes = strings.Fields(s)
	default:
		return nil, &Error{Reason: ErrScopeClaim, Detail: fmt.Sprintf("got %T", s)}
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return nil, &Error{Reason: ErrMissingClaim, Detail: "exp"}
	}
	info := &auth.TokenInfo{UserID: sub, Scopes: scopes, Expiration: exp.Time, Extra: map[string]any{"iss": v.cfg.Issuer}}
	if c, ok := claims["client_id"].(string); ok {
		info.Extra["client_id"] = c
	}
	return info, nil
}

// headerAlg reads the alg of token's header, before anything else is
// looked at.
func headerAlg(token string) (string, error) {
	head, _, ok := strings.Cut(token, ".")
	if !ok || strings.Count(token, ".") != 2 {
		return "", errors.New("want three base64url parts separated by '.'")
	}
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return "", fmt.Errorf("header: %v", err)
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return "", fmt.Errorf("header: %v", err)
	}
	return h.Alg, nil
}

// refusal is the *Error of a failed jwt parse.
func refusal(err error) *Error {
	for _, m := range []struct{ jwt, ours error }{
		{jwt.ErrTokenMalformed, ErrMalformed},
		{jwt.ErrTokenUnverifiable, ErrUnknownKey},
		{jwt.ErrTokenSignatureInvalid, ErrSignature},
		{jwt.ErrTokenInvalidIssuer, ErrIssuer},
		{jwt.ErrTokenInvalidAudience, ErrAudience},
		{jwt.ErrTokenExpired, ErrExpired},
		{jwt.ErrTokenNotValidYet, ErrNotYetValid},
		{jwt.ErrTokenUsedBeforeIssued, ErrNotYetValid},
		{jwt.ErrTokenRequiredClaimMissing, ErrMissingClaim},
	} {
		if errors.Is(err, m.jwt) {
			return &Error{Reason: m.ours, Detail: err.Error()}
		}
	}
	return &Error{Reason: ErrMalformed, Detail: err.Error()}
}
