//go:build tools

// cosign v2 (tests/tools/cosign-v2/go.mod).
package tools

import _ "github.com/sigstore/cosign/v2/cmd/cosign"
