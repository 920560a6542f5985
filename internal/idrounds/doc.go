// Package idrounds splits a batch of a dedup store's items into rounds in
// which no intent id repeats, for stores that send a round's items at once
// (one statement, one pipeline) and so cannot order two items of one id
// within it. The batch contract (effector.DedupStore) answers the second
// occurrence of an id as a second caller would, after the first: a store
// sends the rounds one after another. It refuses nothing; batches without a
// repeated id are one round.
package idrounds
