package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"strings"
	"time"

	"github.com/aguic/aguic/server"
)

// jwtStartTimeout bounds the discovery and the first fetch of the keys at
// start-up.
const jwtStartTimeout = 30 * time.Second

// jwtFlags are the flags of JWT bearer tokens of aguic serve.
type jwtFlags struct {
	issuer, jwksURL, userClaim string
	audiences, claims, algs    []string
	leeway                     time.Duration
}

// define defines the --jwt-* flags on fs.
func (f *jwtFlags) define(fs *flag.FlagSet) {
	f.userClaim = server.DefaultJWTUserClaim
	f.leeway = server.DefaultJWTLeeway
	fs.StringVar(&f.issuer, "jwt-issuer", "", "accept JWT bearer tokens of this OpenID Connect issuer `url` (its discovery document names the keys)")
	fs.StringVar(&f.jwksURL, "jwt-jwks-url", "", "accept JWT bearer tokens signed by the keys of this JWKS `url`")
	checkedVar(fs, &f.audiences, "jwt-audience", "", "the comma-separated `audiences` a JWT must name one of (required with JWT)", names)
	fs.StringVar(&f.userClaim, "jwt-user-claim", server.DefaultJWTUserClaim, "the JWT `claim` whose value is the user, the scope of its threads")
	checkedVar(fs, &f.claims, "jwt-claims", "", "the comma-separated JWT `claims` workflows read as $user.claims", names)
	checkedVar(fs, &f.leeway, "jwt-leeway", server.DefaultJWTLeeway.String(), "the clock skew allowed for a JWT's exp, nbf and iat (`duration`)", durationAtLeast(0))
	checkedVar(fs, &f.algs, "jwt-algorithms", "", "the comma-separated signature `algorithms` a JWT may use; RS*, PS*, ES* and EdDSA by default", names)
}

// names parses a comma-separated list of names.
func names(s string) ([]string, error) {
	var list []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			list = append(list, n)
		}
	}
	if len(list) == 0 {
		return nil, errors.New("an empty list")
	}
	return list, nil
}

// config is the JWTConfig of the flags; nil when neither an issuer nor a
// JWKS URL is given. Flags of JWT without either are an error.
func (f *jwtFlags) config(fs *flag.FlagSet) (*server.JWTConfig, error) {
	if f.issuer == "" && f.jwksURL == "" {
		var set []string
		fs.Visit(func(fl *flag.Flag) {
			if strings.HasPrefix(fl.Name, "jwt-") {
				set = append(set, "--"+fl.Name)
			}
		})
		if len(set) > 0 {
			return nil, errors.New(strings.Join(set, ", ") + ": JWT bearer tokens need --jwt-issuer or --jwt-jwks-url")
		}
		return nil, nil
	}
	if len(f.audiences) == 0 {
		return nil, errors.New("--jwt-audience: JWT bearer tokens need the audience they must be meant for")
	}
	return &server.JWTConfig{
		Issuer:     f.issuer,
		JWKSURL:    f.jwksURL,
		Audiences:  f.audiences,
		UserClaim:  f.userClaim,
		Claims:     f.claims,
		Leeway:     f.leeway,
		Algorithms: f.algs,
	}, nil
}

// startJWT discovers the issuer and fetches its keys; nil without a
// configuration.
func startJWT(ctx context.Context, cfg *server.JWTConfig, log *slog.Logger) (*server.JWT, error) {
	if cfg == nil {
		return nil, nil
	}
	c := *cfg
	c.Logger = log
	ctx, cancel := context.WithTimeout(ctx, jwtStartTimeout)
	defer cancel()
	return server.NewJWT(ctx, c)
}
