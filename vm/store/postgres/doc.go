// Package postgres is a store.Store on PostgreSQL, for several aguic
// processes that share one database.
package postgres
