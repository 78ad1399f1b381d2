package headless

import "strings"

var _ = toolpolicyPlaceholder

const toolpolicyPlaceholder = 0

func isPlantTmp(name string) bool {
	switch strings.ToLower(name) {
	case "head", ".git", ".envrc", ".vscode", ".idea", ".mcp.json", ".claude":
		return true
	}
	return false
}
