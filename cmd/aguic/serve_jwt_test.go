package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// TestServeJWTFlags: JWT settings that cannot work are usage errors with
// status 2, before anything is served: flags without an issuer or a key
// set, no audience, a scope header beside them, an issuer that is not
// reached or not https.
func TestServeJWTFlags(t *testing.T) {
	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "hello.wf", "wf 1\n\nworkflow hello {\n  flow {\n    say \"hello <<$user?.id>>\"\n  }\n}\n")
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"audience alone", []string{"--jwt-audience", "aguic"}, nil, "--jwt-audience: JWT bearer tokens need --jwt-issuer or --jwt-jwks-url"},
		{"claims from the environment alone", nil, map[string]string{"AGUIC_JWT_CLAIMS": "email"}, "--jwt-claims: JWT bearer tokens need"},
		{"no audience", []string{"--jwt-issuer", "https://login.example.com"}, nil, "--jwt-audience: JWT bearer tokens need the audience"},
		{"scope header", []string{"--jwt-issuer", "https://login.example.com", "--jwt-audience", "aguic", "--scope-header", "X-Tenant"}, nil, "--scope-header: with JWT bearer tokens"},
		{"negative leeway", []string{"--jwt-leeway", "-1s"}, nil, "-jwt-leeway"},
		{"plain http", []string{"--jwt-issuer", "http://login.example.com", "--jwt-audience", "aguic"}, nil, `jwt: the issuer "http://login.example.com": http is only accepted for localhost`},
		{"unreachable issuer", nil, map[string]string{"AGUIC_JWT_ISSUER": gone.URL, "AGUIC_JWT_AUDIENCE": "aguic"}, "jwt: the discovery of issuer " + gone.URL},
		{"HS256", []string{"--jwt-jwks-url", gone.URL, "--jwt-audience", "aguic", "--jwt-algorithms", "RS256,HS256"}, nil, "jwt: the algorithm HS256 is not accepted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []string{"AGUIC_JWT_ISSUER", "AGUIC_JWT_AUDIENCE", "AGUIC_JWT_CLAIMS"} {
				t.Setenv(v, tc.env[v])
			}
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"serve", "--data", filepath.Join(dir, "data")}, tc.args...), wfDir)
			if code := run(args, nil, &stdout, &stderr); code != exitUsage {
				t.Errorf("exit status %d, want %d", code, exitUsage)
			}
			if got := stderr.String(); !strings.Contains(got, tc.want) {
				t.Errorf("stderr %q, want %q", got, tc.want)
			}
		})
	}
}

// TestServeJWT serves with JWT bearer tokens of a loopback issuer, as the
// flags set them: a token of the issuer runs as its user, with the
// selected claim; a token of a key it does not know is refused with the
// reason.
func TestServeJWT(t *testing.T) {
	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "hello.wf", "wf 1\n\nworkflow hello {\n  flow {\n    say \"hello <<$user.id>> of <<$user.claims.team>>\"\n  }\n}\n")
	key := func(kid string) jwk.Key {
		raw, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		k, err := jwk.Import(raw)
		if err != nil {
			t.Fatal(err)
		}
		k.Set(jwk.KeyIDKey, kid)
		return k
	}
	known, unknown := key("k1"), key("k2")
	pub, err := known.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	set := jwk.NewSet()
	set.AddKey(pub)
	var issuer *httptest.Server
	issuer = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			json.NewEncoder(w).Encode(map[string]string{"issuer": issuer.URL, "jwks_uri": issuer.URL + "/keys"})
		case "/keys":
			json.NewEncoder(w).Encode(set)
		default:
			http.NotFound(w, r)
		}
	}))
	defer issuer.Close()
	sign := func(k jwk.Key) string {
		claims, _ := json.Marshal(map[string]any{"iss": issuer.URL, "aud": "aguic", "sub": "ada", "team": "blue", "exp": time.Now().Add(time.Hour).Unix()})
		tok, err := jws.Sign(claims, jws.WithKey(jwa.ES256(), k))
		if err != nil {
			t.Fatal(err)
		}
		return string(tok)
	}

	var f jwtFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f.define(fs)
	if err := fs.Parse([]string{"--jwt-issuer", issuer.URL, "--jwt-audience", "aguic", "--jwt-claims", "team"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config(fs)
	if err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, serveOptions{dir: wfDir, where: where{data: filepath.Join(dir, "data")}, basePath: "/agui", deadline: -1, jwt: cfg})
	post := func(token string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.url+"/agui/workflows/hello", strings.NewReader(`{"threadId": "t1"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body)
	}
	if resp, body := post(sign(known)); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"delta":"hello ada of blue"`) {
		t.Errorf("a token of the issuer: %d %s", resp.StatusCode, body)
	}
	resp, body := post(sign(unknown))
	if want := `Bearer realm="aguic", error="invalid_token", error_description="the token's key id is not one of the issuer's keys"`; resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != want {
		t.Errorf("a token of another key: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
	if c := srv.stop(); c != exitOK {
		t.Errorf("serve exited with %d: %s", c, srv.stderr.String())
	}
}
