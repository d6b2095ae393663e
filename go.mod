module github.com/aguic/aguic

go 1.26.8

require (
	github.com/alecthomas/participle/v2 v2.1.4 // indirect
	github.com/expr-lang/expr v1.17.8 // indirect
	github.com/google/uuid v1.6.0
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	golang.org/x/tools v0.52.0 // indirect
)
