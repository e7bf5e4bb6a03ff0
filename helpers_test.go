package lockstep_test

import "github.com/lockstep-queue/lockstep"

// insertedIDs are the ids of inserted jobs, in input order.
func insertedIDs(res []lockstep.InsertResult) []int64 {
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}
