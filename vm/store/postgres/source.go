package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/aguic/aguic/vm/store"
)

// PutSource stores a workflow source under its hash; a hash stored
// already keeps its source.
func (s *Store) PutSource(ctx context.Context, hash string, src []byte) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("put source %q: %w", hash, err)
	}
	if src == nil {
		src = []byte{}
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO sources (hash, src) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, hash, src); err != nil {
		return fmt.Errorf("put source %q: %w", hash, classify(ctx, err))
	}
	return nil
}

// Source returns the source stored under hash.
func (s *Store) Source(ctx context.Context, hash string) ([]byte, error) {
	if err := s.enter(ctx); err != nil {
		return nil, fmt.Errorf("source %q: %w", hash, err)
	}
	var src []byte
	err := s.pool.QueryRow(ctx, `SELECT src FROM sources WHERE hash = $1`, hash).Scan(&src)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("source %q: %w", hash, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("source %q: %w", hash, classify(ctx, err))
	}
	return src, nil
}
