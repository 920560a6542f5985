// Package jwtauth verifies OAuth 2.1 bearer access tokens that are JWTs
// (RFC 9068), for the MCP server's streamable HTTP transport: a Verifier's
// Verify is an auth.TokenVerifier of the MCP Go SDK, which
// mcpserver.WithAuth puts behind the SDK's auth.RequireBearerToken.
//
// A token is verified with github.com/golang-jwt/jwt/v5 against the
// authorization server's JSON Web Key Set, fetched over HTTP (and refreshed:
// hourly, and when a token names a key it does not hold) by
// github.com/MicahParks/keyfunc/v3. It must be signed with an asymmetric
// algorithm of the Verifier's (RS256, ES256 and their kin, EdDSA) by a key
// of that set, name the issuer and the audience (the MCP server's resource
// identifier, RFC 8707) the Verifier expects, carry a subject and an expiry,
// and be within its validity.
//
// It refuses, each with its own reason (an *Error wrapping auth.ErrInvalidToken,
// so the SDK answers 401): a token that is not a JWT, "alg": "none", a
// symmetric algorithm (an HMAC token signed with the issuer's public key is
// the classic key confusion, and is refused before any key is looked up), a
// key the set does not hold, a signature that does not verify, another
// issuer, another audience, an expired or not yet valid token, a token with
// no subject, and a scope claim that is not a string. The token's scopes are
// its scope claim, space separated (RFC 9068, RFC 8693): scopes in any other
// claim (scp, roles) are not scopes, and a call that needs one is refused
// with 403 insufficient_scope.
package jwtauth
