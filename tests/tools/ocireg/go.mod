module example.com/krmpod/ocireg

go 1.26

require github.com/google/go-containerregistry v0.21.7
