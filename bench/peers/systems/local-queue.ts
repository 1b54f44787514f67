// How many jobs a batched setup may hold taken but not yet run, across all
// its workers: graphile-worker's local queue size, and what the batched
// jobtree workers take between them, so both batch alike.
export const LOCAL_QUEUE = 500;
