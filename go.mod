module github.com/framefs/framefs

go 1.26.8

require (
	github.com/abema/go-mp4 v1.4.1
	github.com/asticode/go-astiav v0.16.0
	github.com/spf13/cobra v1.10.2
)

require (
	github.com/asticode/go-astikit v0.42.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
)
