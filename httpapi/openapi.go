package httpapi

import (
	_ "embed"
	"fmt"

	"github.com/goccy/go-yaml"
)

//go:embed openapi.yaml
var openapiYAML []byte

// OpenAPIJSON returns the OpenAPI 3.1 document of the API as JSON, as
// GET /api/openapi.json serves it. httpapi/apitest validates responses
// against it. Each call converts the embedded YAML anew; New does so
// once.
func OpenAPIJSON() ([]byte, error) {
	b, err := yaml.YAMLToJSON(openapiYAML)
	if err != nil {
		return nil, fmt.Errorf("%w: converting to JSON: %w", ErrSpec, err)
	}
	return b, nil
}
