package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/aguic/aguic/internal/every"
)

// The defaults of JWTConfig.
const (
	// DefaultJWTLeeway is the clock skew aguic serve allows between the
	// issuer's clock and its own when it checks exp, nbf and iat.
	DefaultJWTLeeway = 30 * time.Second
	// DefaultJWTUserClaim is the claim whose value is the user.
	DefaultJWTUserClaim = "sub"
	// DefaultJWKSRefresh is how often the keys are fetched again in the
	// background.
	DefaultJWKSRefresh = 15 * time.Minute
	// DefaultJWKSRefetchGap is the least time between two fetches of
	// the keys that a token of an unknown key id causes.
	DefaultJWKSRefetchGap = 30 * time.Second
	// jwtFetchTimeout bounds each fetch of the discovery document or the
	// keys when JWTConfig.Client is nil.
	jwtFetchTimeout = 10 * time.Second
	// maxJWT is the longest bearer token JWT reads, in bytes.
	maxJWT = 16 << 10
	// maxDiscovery is the largest discovery document JWT reads.
	maxDiscovery = 1 << 20
)

// DefaultJWTAlgorithms are the signature algorithms JWTConfig accepts
// unless it names others: the asymmetric ones of RFC 7518, and EdDSA.
var DefaultJWTAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// JWTConfig configures the verification of JWT bearer tokens (JWT).
// Issuer or JWKSURL is required, and Audiences.
type JWTConfig struct {
	// Issuer is the URL of an OpenID Connect issuer: every token's iss
	// must be this exact string. Without JWKSURL, the keys are those of
	// the jwks_uri of its discovery document
	// ({Issuer}/.well-known/openid-configuration), whose issuer must be
	// Issuer too.
	Issuer string
	// JWKSURL is the URL of the JSON Web Key Set that verifies the
	// tokens' signatures; it takes the place of discovery.
	JWKSURL string
	// Audiences: every token's aud must hold one of them.
	Audiences []string
	// UserClaim names the claim whose value (a string) is the user:
	// DefaultJWTUserClaim when "".
	UserClaim string
	// Claims names the claims workflows read as $user.claims; the others
	// are dropped. A claim a token lacks is left out.
	Claims []string
	// Leeway is the clock skew allowed when exp, nbf and iat are checked;
	// 0 allows none.
	Leeway time.Duration
	// Algorithms are the signature algorithms accepted (JWA names);
	// DefaultJWTAlgorithms when empty. "none" and the symmetric HS256,
	// HS384 and HS512 are never accepted: a key set holds public keys.
	Algorithms []string
	// Refresh is how often the keys are fetched again in the background;
	// DefaultJWKSRefresh when 0. A token of a key id the keys do not
	// hold fetches them at once, at most once every
	// DefaultJWKSRefetchGap.
	Refresh time.Duration
	// Client fetches the discovery document and the keys; by default a
	// client with a 10-second timeout.
	Client *http.Client
	// Logger hears of background fetches that fail (the keys fetched last
	// stay in use); default slog.Default().
	Logger *slog.Logger
	// Now is the clock the tokens' times are checked against; default
	// time.Now.
	Now func() time.Time
}

// JWT authenticates requests by JWT bearer tokens signed by the keys of
// an OpenID Connect issuer or of a JWKS URL. Its Auth method is a
// Config.Auth; BearerAuth accepts static tokens beside it. A token is
// refused with a TokenError that says why: not a JWT, not signed, an
// algorithm not accepted, an unknown key id, a signature that does not
// verify, expired, not valid yet, another issuer, another audience, no
// user.
type JWT struct {
	cfg     JWTConfig
	jwksURL string
	algs    map[string]jwa.SignatureAlgorithm
	log     *slog.Logger
	now     func() time.Time

	keys atomic.Pointer[jwkSet]

	fetchMu sync.Mutex // one fetch at a time
	forced  time.Time  // the last fetch an unknown key id caused; under fetchMu

	stop context.CancelFunc
	done <-chan struct{} // closed once the background refresh ended
}

// jwkSet is a key set as it was fetched.
type jwkSet struct{ set jwk.Set }

// NewJWT checks cfg, finds the key set (by discovery, when cfg names an
// issuer and no JWKS URL) and fetches it: an issuer or a key set that
// cannot be reached is an error, so a server does not start that would
// refuse every token. ctx bounds these first fetches. Close stops the
// background refresh.
func NewJWT(ctx context.Context, cfg JWTConfig) (*JWT, error) {
	j := &JWT{cfg: cfg, log: cfg.Logger, now: cfg.Now, algs: map[string]jwa.SignatureAlgorithm{}}
	if err := j.check(); err != nil {
		return nil, fmt.Errorf("jwt: %w", err)
	}
	if j.log == nil {
		j.log = slog.Default()
	}
	if j.now == nil {
		j.now = time.Now
	}
	if j.cfg.Client == nil {
		j.cfg.Client = &http.Client{Timeout: jwtFetchTimeout}
	}
	if j.cfg.UserClaim == "" {
		j.cfg.UserClaim = DefaultJWTUserClaim
	}
	if j.cfg.Refresh <= 0 {
		j.cfg.Refresh = DefaultJWKSRefresh
	}
	j.jwksURL = cfg.JWKSURL
	if j.jwksURL == "" {
		u, err := j.discover(ctx)
		if err != nil {
			return nil, fmt.Errorf("jwt: the discovery of issuer %s: %w", cfg.Issuer, err)
		}
		j.jwksURL = u
	}
	if err := j.fetch(ctx); err != nil {
		return nil, fmt.Errorf("jwt: %w", err)
	}
	bg, stop := context.WithCancel(context.Background())
	j.stop = stop
	j.done = every.Run(bg, j.cfg.Refresh, func() { j.refresh(bg) })
	return j, nil
}

// check checks the configuration and reads its algorithms.
func (j *JWT) check() error {
	c := j.cfg
	if c.Issuer == "" && c.JWKSURL == "" {
		return errors.New("an issuer or a JWKS URL is needed to verify tokens")
	}
	if c.Issuer != "" {
		if err := checkFetchURL(c.Issuer); err != nil {
			return fmt.Errorf("the issuer %q: %w", c.Issuer, err)
		}
	}
	if c.JWKSURL != "" {
		if err := checkFetchURL(c.JWKSURL); err != nil {
			return fmt.Errorf("the JWKS URL %q: %w", c.JWKSURL, err)
		}
	}
	if len(c.Audiences) == 0 {
		return errors.New("an audience is needed: the aud a token must carry to be meant for this server")
	}
	for _, a := range c.Audiences {
		if a == "" {
			return errors.New("an audience is empty")
		}
	}
	for _, n := range c.Claims {
		if n == "" {
			return errors.New("a selected claim has no name")
		}
	}
	if c.Leeway < 0 {
		return errors.New("the leeway must not be negative")
	}
	names := c.Algorithms
	if len(names) == 0 {
		names = DefaultJWTAlgorithms
	}
	for _, n := range names {
		a, ok := jwa.LookupSignatureAlgorithm(n)
		switch {
		case !ok:
			return fmt.Errorf("unknown signature algorithm %q (known: %s)", n, strings.Join(DefaultJWTAlgorithms, ", "))
		case a == jwa.NoSignature() || a.IsSymmetric():
			return fmt.Errorf("the algorithm %s is not accepted: tokens must be signed with a key of the key set", n)
		}
		j.algs[a.String()] = a
	}
	return nil
}

// checkFetchURL accepts an absolute https URL, or an http one to a
// loopback host (a local issuer for development and tests).
func checkFetchURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return errors.New("not a URL")
	case u.Host == "" || u.Scheme != "https" && u.Scheme != "http":
		return errors.New("not an absolute http(s) URL")
	case u.Scheme == "http" && !loopback(u.Hostname()):
		return errors.New("http is only accepted for localhost: use https")
	case u.User != nil || u.Fragment != "":
		return errors.New("a URL with user information or a fragment")
	}
	return nil
}

// loopback reports whether host is localhost or a loopback address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// discover reads the issuer's discovery document: its jwks_uri.
func (j *JWT) discover(ctx context.Context) (string, error) {
	u := strings.TrimSuffix(j.cfg.Issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := j.cfg.Client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDiscovery)).Decode(&doc); err != nil {
		return "", fmt.Errorf("GET %s: not a discovery document: %v", u, err)
	}
	switch {
	case doc.Issuer != j.cfg.Issuer:
		return "", fmt.Errorf("GET %s: the document is of issuer %q, not %q: the issuer must be the exact string the tokens carry", u, doc.Issuer, j.cfg.Issuer)
	case doc.JWKSURI == "":
		return "", fmt.Errorf("GET %s: the document has no jwks_uri", u)
	}
	if err := checkFetchURL(doc.JWKSURI); err != nil {
		return "", fmt.Errorf("GET %s: its jwks_uri %q: %w", u, doc.JWKSURI, err)
	}
	return doc.JWKSURI, nil
}

// fetch fetches the key set and puts it in use.
func (j *JWT) fetch(ctx context.Context) error {
	set, err := jwk.Fetch(ctx, j.jwksURL, jwk.WithHTTPClient(j.cfg.Client))
	if err != nil {
		return fmt.Errorf("fetch the keys from %s: %w", j.jwksURL, err)
	}
	if set.Len() == 0 {
		return fmt.Errorf("fetch the keys from %s: the key set is empty", j.jwksURL)
	}
	j.keys.Store(&jwkSet{set: set})
	return nil
}

// refresh fetches the keys again, in the background; a failure keeps
// the keys fetched last.
func (j *JWT) refresh(ctx context.Context) {
	j.fetchMu.Lock()
	err := j.fetch(ctx)
	j.fetchMu.Unlock()
	if err != nil && ctx.Err() == nil {
		j.log.Warn("jwt: the keys could not be fetched again; the last ones stay in use", "error", err.Error())
	}
}

// Close stops the background refresh of the keys.
func (j *JWT) Close() error {
	if j.stop != nil {
		j.stop()
		<-j.done
	}
	return nil
}

// Auth returns the identity of the request's bearer token, a JWT; a
// request without a bearer token is an error, one whose token is refused
// a TokenError.
func (j *JWT) Auth(r *http.Request) (Identity, error) {
	token, err := bearerToken(r)
	if err != nil {
		return Identity{}, err
	}
	return j.Verify(r.Context(), token)
}

// BearerAuth is a Config.Auth that accepts a bearer token of tokens, and
// a JWT that j verifies; either may be nil. A token of the static list
// wins; with j, any other token goes to j, so one that is not a JWT (an
// opaque access token, say) is refused with that reason.
func BearerAuth(tokens *Tokens, j *JWT) func(*http.Request) (Identity, error) {
	return func(r *http.Request) (Identity, error) {
		token, err := bearerToken(r)
		if err != nil {
			return Identity{}, err
		}
		if tokens != nil {
			if name := tokens.lookup(token); name != "" {
				return Identity{ID: name}, nil
			}
		}
		if j != nil {
			return j.Verify(r.Context(), token)
		}
		return Identity{}, &TokenError{Reason: "the bearer token is not valid"}
	}
}

// refused is a TokenError with a formatted reason.
func refused(format string, args ...any) (Identity, error) {
	return Identity{}, &TokenError{Reason: fmt.Sprintf(format, args...)}
}

// Verify checks token, a compact JWT, and returns its identity: the
// value of the user claim, with the selected claims. A token it refuses
// is a TokenError that says why and never quotes the token.
func (j *JWT) Verify(ctx context.Context, token string) (Identity, error) {
	if len(token) > maxJWT {
		return refused("the token is longer than %d bytes", maxJWT)
	}
	if strings.Count(token, ".") != 2 {
		// An opaque access token, most often: what a provider issues
		// when the client asks for no audience (Auth0, say).
		return refused("the token is not a JWT: a JWT is three base64url parts separated by dots (an opaque access token is not one: request the token for this server's audience)")
	}
	msg, err := jws.Parse([]byte(token), jws.WithCompact())
	if err != nil || len(msg.Signatures()) != 1 {
		return refused("the token is malformed: its header, payload or signature cannot be read")
	}
	hdr := msg.Signatures()[0].ProtectedHeaders()
	alg, ok := hdr.Algorithm()
	switch {
	case !ok:
		return refused("the token names no signature algorithm")
	case alg == jwa.NoSignature():
		return refused("the token is not signed (alg none)")
	}
	alg, ok = j.algs[alg.String()]
	if !ok {
		return refused("the token's signature algorithm is not accepted")
	}
	kid, _ := hdr.KeyID()
	keys := j.keysFor(ctx, kid)
	if len(keys) == 0 {
		if kid == "" {
			return refused("the token names no key id (kid)")
		}
		return refused("the token's key id is not one of the issuer's keys")
	}
	verified := false
	for _, k := range keys {
		if _, err := jws.Verify([]byte(token), jws.WithKey(alg, k)); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return refused("the token's signature does not verify")
	}
	tok, err := jwt.Parse([]byte(token), jwt.WithVerify(false), jwt.WithValidate(true),
		jwt.WithAcceptableSkew(j.cfg.Leeway), jwt.WithClock(jwt.ClockFunc(j.now)), jwt.WithRequiredClaim(jwt.ExpirationKey))
	switch {
	case err == nil:
	case errors.Is(err, jwt.TokenExpiredError()):
		return refused("the token expired")
	case errors.Is(err, jwt.TokenNotYetValidError()):
		return refused("the token is not valid yet (nbf)")
	case errors.Is(err, jwt.InvalidIssuedAtError()):
		return refused("the token was issued in the future (iat)")
	case errors.Is(err, jwt.MissingRequiredClaimError()):
		return refused("the token has no expiry (exp)")
	case j.userNotString(msg.Payload()):
		// jwx reads sub as a string, as RFC 7519 makes it: a user claim
		// sub of another type fails here, before identity reads it.
		return refused("the claim %s of the token, the user, is not a string", j.cfg.UserClaim)
	default:
		return refused("the token's claims cannot be read")
	}
	if j.cfg.Issuer != "" {
		if iss, _ := tok.Issuer(); iss != j.cfg.Issuer {
			return refused("the token was not issued by %s", j.cfg.Issuer)
		}
	}
	if !j.meantForUs(tok) {
		return refused("the token is not meant for this server: its audience holds none of %s", strings.Join(j.cfg.Audiences, ", "))
	}
	return j.identity(msg.Payload())
}

// meantForUs reports whether tok's audience holds one of cfg.Audiences.
func (j *JWT) meantForUs(tok jwt.Token) bool {
	aud, _ := tok.Audience()
	for _, a := range aud {
		for _, want := range j.cfg.Audiences {
			if a == want {
				return true
			}
		}
	}
	return false
}

// identity reads the user and the selected claims of a verified
// payload.
func (j *JWT) identity(payload []byte) (Identity, error) {
	var claims map[string]any
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&claims); err != nil {
		return refused("the token's claims cannot be read")
	}
	var id string
	switch v := claims[j.cfg.UserClaim].(type) {
	case nil:
		return refused("the token has no claim %s, the user", j.cfg.UserClaim)
	case string:
		id = v
	case json.Number:
		id = v.String()
	default:
		return refused("the claim %s of the token, the user, is not a string", j.cfg.UserClaim)
	}
	if id == "" {
		return refused("the claim %s of the token, the user, is empty", j.cfg.UserClaim)
	}
	if err := checkScope(id); err != nil {
		return refused("the claim %s of the token, the user, is not usable: %v", j.cfg.UserClaim, err)
	}
	var sel map[string]any
	for _, n := range j.cfg.Claims {
		if v, ok := claims[n]; ok {
			if sel == nil {
				sel = map[string]any{}
			}
			sel[n] = v
		}
	}
	return Identity{ID: id, Claims: sel}, nil
}

// userNotString reports whether payload has the user claim with a value
// other than a string or null.
func (j *JWT) userNotString(payload []byte) bool {
	var claims map[string]json.RawMessage
	if err := json.Unmarshal(payload, &claims); err != nil {
		return false
	}
	v, ok := claims[j.cfg.UserClaim]
	if !ok {
		return false
	}
	var s *string
	return json.Unmarshal(v, &s) != nil
}

// keysFor returns the keys that may have signed a token of key id kid
// (every key when kid is ""). A kid the keys do not hold fetches them
// again, unless that was done less than DefaultJWKSRefetchGap ago: the
// issuer may have rotated its keys.
func (j *JWT) keysFor(ctx context.Context, kid string) []jwk.Key {
	if keys := j.match(kid); len(keys) > 0 || kid == "" {
		return keys
	}
	j.fetchMu.Lock()
	defer j.fetchMu.Unlock()
	if keys := j.match(kid); len(keys) > 0 {
		return keys // fetched while this waited
	}
	now := j.now()
	if !j.forced.IsZero() && now.Sub(j.forced) < DefaultJWKSRefetchGap {
		return nil
	}
	j.forced = now
	if err := j.fetch(ctx); err != nil {
		j.log.Warn("jwt: the keys could not be fetched for an unknown key id", "error", err.Error())
		return nil
	}
	return j.match(kid)
}

// match returns the keys of the set in use with key id kid, or all of
// them when kid is "".
func (j *JWT) match(kid string) []jwk.Key {
	set := j.keys.Load().set
	if kid != "" {
		if k, ok := set.LookupKeyID(kid); ok {
			return []jwk.Key{k}
		}
		return nil
	}
	keys := make([]jwk.Key, 0, set.Len())
	for i := range set.Len() {
		if k, ok := set.Key(i); ok {
			keys = append(keys, k)
		}
	}
	return keys
}
