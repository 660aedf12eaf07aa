module github.com/gleaner-hpc/gleaner

go 1.26.8

require (
	github.com/bartolsthoorn/gohighs v0.1.1
	github.com/spf13/cobra v1.9.1
	github.com/stretchr/testify v1.10.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/spf13/pflag v1.0.6 // indirect
	go.temporal.io/sdk v1.38.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
