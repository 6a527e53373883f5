//go:build tools

// crane (go-containerregistry's OCI registry tool, tests/tools/crane/go.mod): pushes a
// release's OCI image layout (dist/image) as an index, in the release test and in
// .github/workflows/release.yml (scripts/release-publish).
package tools

import _ "github.com/google/go-containerregistry/cmd/crane"
