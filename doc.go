// Package intentq guarantees that every message a person sends to an AI agent session is
// recorded, delivered, reminded, escalated and answered, on Temporal. The binaries are ./worker
// (the long-running process) and ./starter (the command line); see README.md.
package intentq
