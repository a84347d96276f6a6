//go:build tools

package tools

import (
${IMPORTS}
)
