//go:build tools

// cosign v3 (tests/tools/cosign/go.mod).
package tools

import _ "github.com/sigstore/cosign/v3/cmd/cosign"
