package server_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/vm/store"
)

// The audience of the tests' tokens.
const testAudience = "aguic-test"

// testIssuer is an OpenID Connect issuer on loopback: its discovery
// document, and its key set, which a test may add keys to.
type testIssuer struct {
	*httptest.Server
	mu         sync.Mutex
	public     jwk.Set // what /jwks serves
	jwksGets   atomic.Int32
	discovered atomic.Int32
}

// signer is a private key of the issuer, and its algorithm.
type signer struct {
	key jwk.Key
	alg jwa.SignatureAlgorithm
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	is := &testIssuer{public: jwk.NewSet()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		is.discovered.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.URL, "jwks_uri": is.URL + "/jwks"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksGets.Add(1)
		is.mu.Lock()
		defer is.mu.Unlock()
		json.NewEncoder(w).Encode(is.public)
	})
	is.Server = httptest.NewServer(mux)
	t.Cleanup(is.Close)
	return is
}

// newKey makes a private key of kind "rsa" or "ec" with key id kid; a
// key the issuer publishes when publish.
func (is *testIssuer) newKey(t *testing.T, kind, kid string, publish bool) signer {
	t.Helper()
	var raw any
	alg := jwa.RS256()
	switch kind {
	case "rsa":
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		raw = k
	case "ec":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		raw, alg = k, jwa.ES256()
	}
	priv, err := jwk.Import(raw)
	if err != nil {
		t.Fatal(err)
	}
	if kid != "" {
		priv.Set(jwk.KeyIDKey, kid)
	}
	if publish {
		pub, err := priv.PublicKey()
		if err != nil {
			t.Fatal(err)
		}
		is.mu.Lock()
		is.public.AddKey(pub)
		is.mu.Unlock()
	}
	return signer{key: priv, alg: alg}
}

// sign signs claims with s: a compact JWT.
func (s signer) sign(t *testing.T, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.Sign(payload, jws.WithKey(s.alg, s.key))
	if err != nil {
		t.Fatal(err)
	}
	return string(tok)
}

// testClock is the clock of the tests' verifiers: it moves only when a
// test moves it.
type testClock struct{ at atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.at.Store(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).Unix())
	return c
}

func (c *testClock) now() time.Time           { return time.Unix(c.at.Load(), 0) }
func (c *testClock) add(d time.Duration)      { c.at.Add(int64(d / time.Second)) }
func (c *testClock) unix(d time.Duration) int { return int(c.now().Add(d).Unix()) }

// claimsOf are the claims of a valid token of user sub, changed by the
// pairs of more (a nil value removes the claim).
func (is *testIssuer) claimsOf(c *testClock, sub string, more ...any) map[string]any {
	m := map[string]any{"iss": is.URL, "aud": testAudience, "sub": sub, "iat": c.unix(0), "exp": c.unix(time.Hour)}
	for i := 0; i+1 < len(more); i += 2 {
		k := more[i].(string)
		if more[i+1] == nil {
			delete(m, k)
		} else {
			m[k] = more[i+1]
		}
	}
	return m
}

// newJWT is a verifier of is's tokens, by discovery, on clock c.
func newJWT(t *testing.T, is *testIssuer, c *testClock, edit func(*server.JWTConfig)) *server.JWT {
	t.Helper()
	cfg := server.JWTConfig{
		Issuer:    is.URL,
		Audiences: []string{"other", testAudience},
		Claims:    []string{"email", "role"},
		Leeway:    30 * time.Second,
		Client:    is.Client(),
		Logger:    discardLogger(),
		Now:       c.now,
	}
	if edit != nil {
		edit(&cfg)
	}
	j, err := server.NewJWT(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// b64 is s in base64url without padding.
func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// notJWT is the reason a token that is not a JWT is refused.
const notJWT = "the token is not a JWT: a JWT is three base64url parts separated by dots (an opaque access token is not one: request the token for this server's audience)"

// TestJWTRefusals: every token JWT refuses is answered 401 with an
// invalid_token challenge that says why, on the AG-UI routes and on /mcp,
// and the token is quoted nowhere.
func TestJWTRefusals(t *testing.T) {
	is := newTestIssuer(t)
	clock := newTestClock()
	rsaKey := is.newKey(t, "rsa", "rsa-1", true)
	stranger := is.newKey(t, "rsa", "stranger", false)
	noKid := is.newKey(t, "ec", "", false)
	j := newJWT(t, is, clock, nil)
	e := newEnvOf(t, filepath.Join("testdata", "identity", "*.wf"), func(c *server.Config) {
		c.Auth = j.Auth
		c.MCP = true
	})
	valid := rsaKey.sign(t, is.claimsOf(clock, "alice"))
	parts := strings.Split(valid, ".")
	hmac, err := jws.Sign([]byte(`{"sub":"alice"}`), jws.WithKey(jwa.HS256(), []byte("a shared secret of thirty-two bytes!")))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, token, reason string
	}{
		{"expired", rsaKey.sign(t, is.claimsOf(clock, "alice", "exp", clock.unix(-time.Minute))), "the token expired"},
		{"not valid yet", rsaKey.sign(t, is.claimsOf(clock, "alice", "nbf", clock.unix(time.Minute))), "the token is not valid yet (nbf)"},
		{"issued in the future", rsaKey.sign(t, is.claimsOf(clock, "alice", "iat", clock.unix(time.Minute))), "the token was issued in the future (iat)"},
		{"no expiry", rsaKey.sign(t, is.claimsOf(clock, "alice", "exp", nil)), "the token has no expiry (exp)"},
		{"wrong audience", rsaKey.sign(t, is.claimsOf(clock, "alice", "aud", "someone-else")), "the token is not meant for this server: its audience holds none of other, aguic-test"},
		{"wrong issuer", rsaKey.sign(t, is.claimsOf(clock, "alice", "iss", "https://evil.example")), "the token was not issued by " + is.URL},
		{"unsigned", b64(`{"alg":"none","kid":"rsa-1"}`) + "." + parts[1] + ".", "the token is not signed (alg none)"},
		{"tampered", parts[0] + "." + b64(`{"iss":"`+is.URL+`","aud":"aguic-test","sub":"root","exp":`+fmt.Sprint(clock.unix(time.Hour))+`}`) + "." + parts[2], "the token's signature does not verify"},
		{"another key's signature", parts[0] + "." + parts[1] + "." + strings.Split(stranger.sign(t, is.claimsOf(clock, "alice")), ".")[2], "the token's signature does not verify"},
		{"unknown key id", stranger.sign(t, is.claimsOf(clock, "alice")), "the token's key id is not one of the issuer's keys"},
		{"no key fits", noKid.sign(t, is.claimsOf(clock, "alice")), "the token's signature does not verify"},
		{"symmetric algorithm", string(hmac), "the token's signature algorithm is not accepted"},
		{"no user", rsaKey.sign(t, is.claimsOf(clock, "alice", "sub", nil)), "the token has no claim sub, the user"},
		{"a user that is no scope", rsaKey.sign(t, is.claimsOf(clock, "alice", "sub", "al\u00efce")), "the claim sub of the token, the user, is not usable: the scope must be printable ASCII, found byte 0xc3"},
		{"a user that is an object", rsaKey.sign(t, is.claimsOf(clock, "alice", "sub", map[string]any{"id": "alice"})), "the claim sub of the token, the user, is not a string"},
		{"a user that is an array", rsaKey.sign(t, is.claimsOf(clock, "alice", "sub", []string{"alice"})), "the claim sub of the token, the user, is not a string"},
		{"a user that is a boolean", rsaKey.sign(t, is.claimsOf(clock, "alice", "sub", true)), "the claim sub of the token, the user, is not a string"},
		{"a user that is a number", rsaKey.sign(t, is.claimsOf(clock, "alice", "sub", 42)), "the claim sub of the token, the user, is not a string"},
		{"claims of the wrong type", rsaKey.sign(t, is.claimsOf(clock, "alice", "iss", 42)), "the token's claims cannot be read"},
		{"malformed", "abc.def.ghi", "the token is malformed: its header, payload or signature cannot be read"},
		{"not a JWT", "abc.def", notJWT},
		{"an opaque token", "not-a-jwt", notJWT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/agui/workflows/whoami", "/agui/mcp"} {
				req, _ := http.NewRequest(http.MethodPost, e.http.URL+path, strings.NewReader(`{"threadId": "t1"}`))
				req.Header.Set("Authorization", "Bearer "+tc.token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := e.http.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := `Bearer realm="aguic", error="invalid_token", error_description="` + tc.reason + `"`
				if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != want {
					t.Errorf("%s: %d, WWW-Authenticate %q, want %q", path, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
				}
				var p map[string]any
				if err := json.Unmarshal(body, &p); err != nil || p["detail"] != tc.reason {
					t.Errorf("%s: problem %s, want the detail %q", path, body, tc.reason)
				}
				for _, part := range strings.Split(tc.token, ".") {
					if len(part) > 8 && bytes.Contains(body, []byte(part)) {
						t.Errorf("%s: the answer quotes the token: %s", path, body)
					}
				}
			}
		})
	}
	if _, err := e.store.Thread(context.Background(), store.Key{Scope: "root", Workflow: "whoami", Thread: "t1"}); err == nil {
		t.Errorf("a refused token ran")
	}
	// The valid token passes, within the leeway too.
	for _, tok := range []string{valid, rsaKey.sign(t, is.claimsOf(clock, "alice", "exp", clock.unix(-20*time.Second), "nbf", clock.unix(20*time.Second)))} {
		if got := text(e.stream(e.send(http.MethodPost, "/agui/workflows/whoami", `{"threadId": "t1"}`, bearer(tok)...))); got != "alice -\n" {
			t.Errorf("text %q", got)
		}
	}
}

// TestBearerAuthReasons: with a JWT verifier, a token that is no static
// one is refused with the verifier's reason, opaque tokens included;
// static tokens pass as before, and without a verifier an unknown token
// is just not valid.
func TestBearerAuthReasons(t *testing.T) {
	is := newTestIssuer(t)
	clock := newTestClock()
	rsaKey := is.newKey(t, "rsa", "rsa-1", true)
	j := newJWT(t, is, clock, nil)
	toks, err := server.TokenList("AGUIC_TOKENS", "carol:carol-token")
	if err != nil {
		t.Fatal(err)
	}
	alice := rsaKey.sign(t, is.claimsOf(clock, "alice"))
	const notValid = "the bearer token is not valid"
	for _, tc := range []struct {
		name   string
		tokens *server.Tokens
		j      *server.JWT
		token  string
		user   string // "" when refused
		reason string
	}{
		{"JWT only, opaque token", nil, j, "not-a-jwt", "", notJWT},
		{"JWT only, two parts", nil, j, "abc.def", "", notJWT},
		{"JWT only, four parts", nil, j, "a.b.c.d", "", notJWT},
		{"JWT only, malformed", nil, j, "abc.def.ghi", "", "the token is malformed: its header, payload or signature cannot be read"},
		{"JWT only, a JWT", nil, j, alice, "alice", ""},
		{"both, a static token", toks, j, "carol-token", "carol", ""},
		{"both, a JWT", toks, j, alice, "alice", ""},
		{"both, an unknown token", toks, j, "carol-tokeN", "", notJWT},
		{"static only, a static token", toks, nil, "carol-token", "carol", ""},
		{"static only, an unknown token", toks, nil, "not-a-jwt", "", notValid},
		{"static only, a JWT", toks, nil, alice, "", notValid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/agui/threads", nil)
			r.Header.Set("Authorization", "Bearer "+tc.token)
			id, err := server.BearerAuth(tc.tokens, tc.j)(r)
			var te *server.TokenError
			switch {
			case tc.reason == "" && (err != nil || id.ID != tc.user):
				t.Errorf("identity %+v, %v; want %s", id, err, tc.user)
			case tc.reason != "" && (!errors.As(err, &te) || te.Reason != tc.reason):
				t.Errorf("error %v, want the reason %q", err, tc.reason)
			}
		})
	}
}

// TestJWTUser: the user of a JWT, of a static token, or nobody is $user
// of the workflows, called workflows included, and a conversation's
// $user is the one of each turn; only the selected claims are stored.
func TestJWTUser(t *testing.T) {
	is := newTestIssuer(t)
	clock := newTestClock()
	rsaKey := is.newKey(t, "rsa", "rsa-1", true)
	ecKey := is.newKey(t, "ec", "ec-1", true)
	j := newJWT(t, is, clock, nil)
	toks, err := server.TokenList("AGUIC_TOKENS", "carol:carol-token")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOf(t, filepath.Join("testdata", "identity", "*.wf"), func(c *server.Config) { c.Auth = server.BearerAuth(toks, j) })
	alice := rsaKey.sign(t, is.claimsOf(clock, "alice", "email", "alice@example.com", "ssn", "kept-out-123"))
	bob := ecKey.sign(t, is.claimsOf(clock, "bob", "role", "admin"))
	for _, tc := range []struct {
		who  []string
		text string
		out  map[string]any
	}{
		{bearer(alice), "alice alice@example.com\n", map[string]any{"id": "alice", "inner": "alice"}},
		{bearer(bob), "bob -\n", map[string]any{"id": "bob", "inner": "bob"}},
		{bearer("carol-token"), "carol -\n", map[string]any{"id": "carol", "inner": "carol"}},
	} {
		evs := e.stream(e.send(http.MethodPost, "/agui/workflows/whoami", `{"threadId": "w1"}`, tc.who...))
		if got := text(evs); got != tc.text {
			t.Errorf("text %q, want %q", got, tc.text)
		}
		outcome(t, evs)
		got, _ := json.Marshal(last(evs)["result"])
		if want, _ := json.Marshal(tc.out); !bytes.Equal(got, want) {
			t.Errorf("result %s, want %v", got, tc.out)
		}
	}
	th, err := e.store.Thread(context.Background(), store.Key{Scope: "alice", Workflow: "whoami", Thread: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := store.LoadFrame(th)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(f.Context["user"]); string(got) != `{"claims":{"email":"alice@example.com"},"id":"alice"}` {
		t.Errorf("the thread keeps $user %s", got)
	}
	for _, raw := range append([][]byte{th.Frame}, th.Deltas...) {
		if bytes.Contains(raw, []byte("kept-out-123")) || bytes.Contains(raw, []byte(strings.Split(alice, ".")[2])) {
			t.Errorf("the thread holds a claim not selected, or the token: %s", raw)
		}
	}

	// A conversation: each turn's $user, with its claims of the moment.
	e.turn(bearer(bob), "greeter", "g1", "r1", "hello")
	admin := text(e.turn(bearer(bob), "greeter", "g1", "r2", "again"))
	bob2 := ecKey.sign(t, is.claimsOf(clock, "bob", "role", "reader"))
	reader := text(e.turn(bearer(bob2), "greeter", "g1", "r3", "later"))
	if admin != "Turn of bob (admin): again\n" || reader != "Turn of bob (reader): later\n" {
		t.Errorf("turns %q, %q", admin, reader)
	}

	// Nobody: without authentication $user is nil.
	anon := newEnvOf(t, filepath.Join("testdata", "identity", "*.wf"), nil)
	if got := text(anon.stream(anon.post("/agui/workflows/whoami", `{"threadId": "w1"}`))); got != "nobody -\n" {
		t.Errorf("anonymous: %q", got)
	}
	if got := text(anon.turn(nil, "greeter", "g1", "r1", "hi")); got != "Turn of nobody (no role): hi\n" {
		t.Errorf("anonymous: %q", got)
	}
}

// TestJWTScopes: two users of JWTs never see each other's threads: not
// in the list, not by id, and a run on the other's thread id is a thread
// of one's own.
func TestJWTScopes(t *testing.T) {
	is := newTestIssuer(t)
	clock := newTestClock()
	key := is.newKey(t, "ec", "ec-1", true)
	j := newJWT(t, is, clock, nil)
	e := newEnvOf(t, filepath.Join("testdata", "identity", "*.wf"), func(c *server.Config) { c.Auth = j.Auth })
	alice, bob := bearer(key.sign(t, is.claimsOf(clock, "alice"))), bearer(key.sign(t, is.claimsOf(clock, "bob")))
	e.turn(alice, "greeter", "secret", "r1", "my plans")

	if got, _ := e.listAll("", bob...); len(got) != 0 {
		t.Errorf("bob lists %v", threadNames(got))
	}
	if got, _ := e.listAll("", alice...); len(got) != 1 || got[0].ThreadID != "secret" {
		t.Errorf("alice lists %v", threadNames(got))
	}
	for _, path := range []string{"/agui/threads/secret", "/agui/threads/secret/messages", "/agui/threads/secret/runs", "/agui/threads/secret/events", "/agui/threads/secret/replay"} {
		e.problem(e.send(http.MethodGet, path, "", bob...), http.StatusNotFound)
	}
	// bob's run on that id starts a thread of his own.
	if got := text(e.turn(bob, "greeter", "secret", "r1", "mine")); got != "Turn of bob (no role): mine\n" {
		t.Errorf("bob's turn %q", got)
	}
	if got := text(e.turn(alice, "greeter", "secret", "r2", "still mine")); got != "Turn of alice (no role): still mine\n" {
		t.Errorf("alice's turn %q", got)
	}
	var msgs struct {
		Messages []map[string]any `json:"messages"`
	}
	decode(t, e.send(http.MethodGet, "/agui/threads/secret/messages", "", alice...), &msgs)
	if all, _ := json.Marshal(msgs); bytes.Contains(all, []byte(`"mine"`)) || !bytes.Contains(all, []byte("my plans")) {
		t.Errorf("alice's messages %s", all)
	}
}

// TestJWTKeyRotation: a token of a key the issuer published after the
// keys were fetched is accepted: its key id fetches them again. Unknown
// key ids fetch them at most once in a while.
func TestJWTKeyRotation(t *testing.T) {
	is := newTestIssuer(t)
	clock := newTestClock()
	is.newKey(t, "rsa", "rsa-1", true)
	j := newJWT(t, is, clock, nil)
	if n := is.jwksGets.Load(); n != 1 {
		t.Fatalf("%d fetches at start, want 1", n)
	}
	next := is.newKey(t, "ec", "ec-2", true)
	auth := func(tok string) (server.Identity, error) {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return j.Auth(r)
	}
	if id, err := auth(next.sign(t, is.claimsOf(clock, "dana"))); err != nil || id.ID != "dana" {
		t.Fatalf("a token of the new key: %v, %v", id, err)
	}
	if n := is.jwksGets.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
	ghost := is.newKey(t, "rsa", "ghost", false)
	for range 3 {
		if _, err := auth(ghost.sign(t, is.claimsOf(clock, "dana"))); err == nil || err.Error() != "the token's key id is not one of the issuer's keys" {
			t.Errorf("a token of an unknown key: %v", err)
		}
	}
	if n := is.jwksGets.Load(); n != 2 {
		t.Errorf("unknown key ids right after a fetch fetched again: %d fetches, want 2", n)
	}
	clock.add(server.DefaultJWKSRefetchGap)
	auth(ghost.sign(t, is.claimsOf(clock, "dana")))
	if n := is.jwksGets.Load(); n != 3 {
		t.Errorf("%d fetches, want 3 once the gap passed", n)
	}
}

// TestJWTKeySet: with a JWKS URL nothing is discovered, and without an
// issuer any iss passes; the algorithms may be narrowed; claims may name
// another user claim.
func TestJWTKeySet(t *testing.T) {
	is := newTestIssuer(t)
	clock := newTestClock()
	rsaKey := is.newKey(t, "rsa", "rsa-1", true)
	ecKey := is.newKey(t, "ec", "ec-1", true)
	j := newJWT(t, is, clock, func(c *server.JWTConfig) {
		c.Issuer, c.JWKSURL = "", is.URL+"/jwks"
		c.Algorithms = []string{"ES256"}
		c.UserClaim = "email"
	})
	if n := is.discovered.Load(); n != 0 {
		t.Errorf("discovered %d times with a JWKS URL", n)
	}
	id, err := j.Verify(context.Background(), ecKey.sign(t, is.claimsOf(clock, "u-1", "iss", "https://anyone.example", "email", "eve@example.com", "role", "ops")))
	if err != nil || id.ID != "eve@example.com" || id.Claims["role"] != "ops" || len(id.Claims) != 2 {
		t.Errorf("identity %+v, %v", id, err)
	}
	if _, err := j.Verify(context.Background(), rsaKey.sign(t, is.claimsOf(clock, "u-1", "email", "eve@example.com"))); err == nil || err.Error() != "the token's signature algorithm is not accepted" {
		t.Errorf("RS256 with ES256 only: %v", err)
	}
	if _, err := j.Verify(context.Background(), ecKey.sign(t, is.claimsOf(clock, "u-1", "email", true))); err == nil || err.Error() != "the claim email of the token, the user, is not a string" {
		t.Errorf("a number that is not a user: %v", err)
	}
}

// TestNewJWT: a configuration that cannot verify tokens, or an issuer
// that cannot be reached or does not fit, is an error at start.
func TestNewJWT(t *testing.T) {
	is := newTestIssuer(t)
	is.newKey(t, "rsa", "rsa-1", true)
	empty := newTestIssuer(t)
	liar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"issuer": "https://accounts.example", "jwks_uri": "`+is.URL+`/jwks"}`)
	}))
	defer liar.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for _, tc := range []struct {
		name string
		cfg  server.JWTConfig
		want string
	}{
		{"nothing to verify with", server.JWTConfig{Audiences: []string{"a"}}, "jwt: an issuer or a JWKS URL is needed"},
		{"no audience", server.JWTConfig{Issuer: is.URL}, "jwt: an audience is needed"},
		{"a relative issuer", server.JWTConfig{Issuer: "accounts.example", Audiences: []string{"a"}}, `jwt: the issuer "accounts.example": not an absolute http(s) URL`},
		{"plain http elsewhere", server.JWTConfig{JWKSURL: "http://keys.example/jwks", Audiences: []string{"a"}}, `jwt: the JWKS URL "http://keys.example/jwks": http is only accepted for localhost: use https`},
		{"alg none", server.JWTConfig{Issuer: is.URL, Audiences: []string{"a"}, Algorithms: []string{"none"}}, "jwt: the algorithm none is not accepted"},
		{"HS256", server.JWTConfig{Issuer: is.URL, Audiences: []string{"a"}, Algorithms: []string{"HS256"}}, "jwt: the algorithm HS256 is not accepted"},
		{"unknown algorithm", server.JWTConfig{Issuer: is.URL, Audiences: []string{"a"}, Algorithms: []string{"RS257"}}, `jwt: unknown signature algorithm "RS257"`},
		{"negative leeway", server.JWTConfig{Issuer: is.URL, Audiences: []string{"a"}, Leeway: -time.Second}, "jwt: the leeway must not be negative"},
		{"another issuer's document", server.JWTConfig{Issuer: liar.URL, Audiences: []string{"a"}}, `is of issuer "https://accounts.example", not "` + liar.URL + `"`},
		{"unreachable issuer", server.JWTConfig{Issuer: gone.URL, Audiences: []string{"a"}}, "jwt: the discovery of issuer " + gone.URL + ": Get "},
		{"unreachable keys", server.JWTConfig{JWKSURL: gone.URL + "/jwks", Audiences: []string{"a"}}, "jwt: fetch the keys from " + gone.URL + "/jwks: "},
		{"no keys", server.JWTConfig{Issuer: empty.URL, Audiences: []string{"a"}}, "jwt: fetch the keys from " + empty.URL + "/jwks: the key set is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := server.NewJWT(context.Background(), tc.cfg)
			if err == nil {
				j.Close()
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q", err, tc.want)
			}
		})
	}
}

// TestJWTOnMCP: a JWT's user calls the workflows as MCP tools, in its
// own scope.
func TestJWTOnMCP(t *testing.T) {
	is := newTestIssuer(t)
	clock := newTestClock()
	key := is.newKey(t, "rsa", "rsa-1", true)
	j := newJWT(t, is, clock, nil)
	e := newMCPEnv(t, func(c *server.Config) { c.Auth = j.Auth })
	cs := e.connect(t, mcpClient{version: mcpVersions[len(mcpVersions)-1], token: key.sign(t, is.claimsOf(clock, "alice"))})
	res := call(t, cs, "counter", map[string]any{"message": "hi"})
	res.want(t, "finished", "Turn 1: hi")
	if _, err := e.store.Thread(context.Background(), store.Key{Scope: "alice", Workflow: "counter", Thread: res.thread()}); err != nil {
		t.Errorf("the tool call's thread is not alice's: %v", err)
	}
}
