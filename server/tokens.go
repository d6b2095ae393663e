package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// maxTokenErrors is how many errors ParseTokens reports before it stops.
const maxTokenErrors = 10

// Tokens authenticates requests by bearer token: every token belongs to a
// name, and a request that carries it has that name as its scope. Its Auth
// method is a Config.Auth. Tokens are kept as SHA-256 hashes and compared
// in constant time.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	name string
	hash [sha256.Size]byte
}

// ParseTokens reads a tokens file: one token a line, `name token` or
// `name:token`; blank lines and lines that start with # are left out. A
// name may have several tokens (to rotate them); a token belongs to one
// name. Errors are `file:line: message`, at most ten, and never quote a
// token.
func ParseTokens(file string, text []byte) (*Tokens, error) {
	var items []tokenItem
	for i, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		items = append(items, tokenItem{where: fmt.Sprintf("%s:%d", file, i+1), text: line})
	}
	return tokensOf(file, items)
}

// TokenList reads tokens from a comma-separated list of `name:token`
// pairs, as AGUIC_TOKENS holds them; where names the list in errors.
func TokenList(where, list string) (*Tokens, error) {
	var items []tokenItem
	for i, pair := range strings.Split(list, ",") {
		if pair = strings.TrimSpace(pair); pair != "" {
			items = append(items, tokenItem{where: fmt.Sprintf("%s: pair %d", where, i+1), text: pair})
		}
	}
	return tokensOf(where, items)
}

type tokenItem struct{ where, text string }

func tokensOf(where string, items []tokenItem) (*Tokens, error) {
	t := &Tokens{}
	var errs []error
	owner := map[[sha256.Size]byte]string{}
	for _, it := range items {
		if len(errs) == maxTokenErrors {
			errs = append(errs, errors.New("(and more errors)"))
			break
		}
		name, token, err := splitToken(it.text)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", it.where, err))
			continue
		}
		h := sha256.Sum256([]byte(token))
		if other, ok := owner[h]; ok {
			errs = append(errs, fmt.Errorf("%s: the token of %q is already the token of %q: every token must be unique", it.where, name, other))
			continue
		}
		owner[h] = name
		t.entries = append(t.entries, tokenEntry{name: name, hash: h})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(t.entries) == 0 {
		return nil, fmt.Errorf("%s: no tokens", where)
	}
	return t, nil
}

// splitToken reads `name token` or `name:token`.
func splitToken(s string) (name, token string, err error) {
	switch f := strings.Fields(s); len(f) {
	case 1:
		var ok bool
		if name, token, ok = strings.Cut(s, ":"); !ok {
			return "", "", errors.New(`expected "name token" or "name:token", found one word`)
		}
	case 2:
		name, token = strings.TrimSuffix(f[0], ":"), f[1]
	default:
		return "", "", fmt.Errorf(`expected "name token" or "name:token", found %d words`, len(f))
	}
	switch {
	case name == "":
		return "", "", errors.New("a token has no name")
	case token == "":
		return "", "", fmt.Errorf("the name %q has an empty token", name)
	case len(name) > maxScope:
		return "", "", fmt.Errorf("a name is longer than %d bytes", maxScope)
	}
	return name, token, nil
}

// Len is the number of tokens.
func (t *Tokens) Len() int { return len(t.entries) }

// Auth returns the name of the request's bearer token as its identity:
// the request's scope. A request without an Authorization header of the
// Bearer scheme is an error, one with a token not in t a TokenError.
func (t *Tokens) Auth(r *http.Request) (Identity, error) {
	token, err := bearerToken(r)
	if err != nil {
		return Identity{}, err
	}
	if name := t.lookup(token); name != "" {
		return Identity{ID: name}, nil
	}
	return Identity{}, &TokenError{Reason: "the bearer token is not valid"}
}

// lookup is the name of token, or "".
func (t *Tokens) lookup(token string) string {
	h := sha256.Sum256([]byte(token))
	name := ""
	// Every entry is compared, so the time taken does not tell which
	// one matched, or how far a guess was right.
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 {
			name = e.name
		}
	}
	return name
}

// bearerToken is the token of r's Authorization header of the Bearer
// scheme; an error when it has none.
func bearerToken(r *http.Request) (string, error) {
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", errors.New("the request needs a bearer token: Authorization: Bearer <token>")
	}
	return token, nil
}
