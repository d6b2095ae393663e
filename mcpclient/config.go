package mcpclient

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aguic/aguic/vm"
)

// DefaultTimeout bounds one tool call of a server that declares no
// timeout.
const DefaultTimeout = 60 * time.Second

// DefaultBackoff is the wait between tries of a server that declares
// retries but no backoff.
const DefaultBackoff = "1s..8s"

// config is a server's declaration evaluated: what selects its
// connection. Two declarations with equal configs share one.
type config struct {
	Name    string            `json:"name"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// stdio reports whether the server is a program to start.
func (c *config) stdio() bool { return c.URL == "" }

// key identifies the connection of the config.
func (c *config) key() string {
	data, _ := json.Marshal(c) // strings, lists and maps of strings: it cannot fail
	return string(data)
}

// evalConfig evaluates the values of a declaration with vm.EvalConst.
func evalConfig(s *vm.Server) (*config, error) {
	c := &config{Name: s.Name}
	var err error
	if (s.Command == nil) == (s.URL == nil) {
		return nil, fmt.Errorf("mcp server %s: declares neither command nor url, or both", s.Name)
	}
	if s.Command != nil {
		if c.Command, err = evalString(s, "command", s.Command); err != nil {
			return nil, err
		}
		if c.Command == "" {
			return nil, fmt.Errorf("mcp server %s: command is empty", s.Name)
		}
		if c.Args, err = evalStrings(s, "args", s.Args); err != nil {
			return nil, err
		}
		if c.Env, err = evalObject(s, "env", s.Env); err != nil {
			return nil, err
		}
		return c, nil
	}
	if c.URL, err = evalString(s, "url", s.URL); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
		return nil, fmt.Errorf("mcp server %s: url must start with http:// or https://, found %q", s.Name, c.URL)
	}
	if c.Headers, err = evalObject(s, "headers", s.Headers); err != nil {
		return nil, err
	}
	return c, nil
}

func eval(s *vm.Server, key string, v *vm.Value) (any, error) {
	x, err := vm.EvalConst(v)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %s: %v", s.Name, key, err)
	}
	return x, nil
}

func evalString(s *vm.Server, key string, v *vm.Value) (string, error) {
	x, err := eval(s, key, v)
	if err != nil {
		return "", err
	}
	str, ok := x.(string)
	if !ok {
		return "", fmt.Errorf("mcp server %s: %s must be a string, found %s", s.Name, key, vm.Describe(x))
	}
	return str, nil
}

func evalStrings(s *vm.Server, key string, v *vm.Value) ([]string, error) {
	x, err := eval(s, key, v)
	if err != nil || x == nil {
		return nil, err
	}
	list, ok := x.([]any)
	if !ok {
		return nil, fmt.Errorf("mcp server %s: %s must be a list of strings, found %s", s.Name, key, vm.Describe(x))
	}
	out := make([]string, len(list))
	for i, e := range list {
		str, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("mcp server %s: %s[%d] must be a string, found %s", s.Name, key, i, vm.Describe(e))
		}
		out[i] = str
	}
	return out, nil
}

func evalObject(s *vm.Server, key string, v *vm.Value) (map[string]string, error) {
	x, err := eval(s, key, v)
	if err != nil || x == nil {
		return nil, err
	}
	m, ok := x.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("mcp server %s: %s must be an object of strings, found %s", s.Name, key, vm.Describe(x))
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		str, ok := m[k].(string)
		if !ok {
			return nil, fmt.Errorf("mcp server %s: %s.%s must be a string, found %s", s.Name, key, k, vm.Describe(m[k]))
		}
		out[k] = str
	}
	return out, nil
}

// policy is how one call is bounded and retried.
type policy struct {
	timeout        time.Duration
	retries        int
	first, longest time.Duration
}

// policyOf reads a server's timeout, retry and backoff.
func policyOf(s *vm.Server) (policy, error) {
	p := policy{timeout: s.Timeout, retries: max(s.Retry, 0)}
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	b := s.Backoff
	if b == "" {
		b = DefaultBackoff
	}
	var err error
	if p.first, p.longest, err = vm.ParseBackoff(b); err != nil {
		return p, fmt.Errorf("mcp server %s: backoff: %v", s.Name, err)
	}
	return p, nil
}

// delay is the wait before retry n (1 for the first): the first wait
// doubled n-1 times, at most the longest.
func (p policy) delay(n int) time.Duration {
	d := p.first
	for i := 1; i < n && d < p.longest; i++ {
		d *= 2
	}
	return min(d, p.longest)
}
