package server

import _ "embed"

// openAPIDoc is the OpenAPI 3.1 document of every route.
//
//go:embed openapi.json
var openAPIDoc []byte
