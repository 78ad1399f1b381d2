// Package cluster holds the tests of intentq on a Temporal cluster backed by PostgreSQL, as
// scripts/cluster-up brings it up (the docker-compose.yml topology without Docker): several
// worker processes, one killed and restarted, encrypted payloads.
package cluster
