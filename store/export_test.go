package store

import "context"

// Store tests hash with the cheapest parameters: production cost (64 MiB,
// 3 passes) makes every hash take most of a second under -race.
func init() { hashCost = hashParams{memory: 1024, time: 1, threads: 1} }

// HashPasswordWith hashes password with the given argon2id parameters,
// for tests of hashes made with other parameters than the current ones.
func HashPasswordWith(password string, memoryKiB, passes uint32, lanes uint8) string {
	h, err := hashPasswordWith(context.Background(), password, hashParams{memory: memoryKiB, time: passes, threads: lanes})
	if err != nil {
		panic(err)
	}
	return h
}
