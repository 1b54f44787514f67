// The public surface of @jobtree/supervisor, picked by hand.
export {};
