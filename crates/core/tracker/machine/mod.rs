//! The machines: what each kind's lines do to its open incidents, one
//! file a kind (the kind's data and rules are in `kind/`, below the
//! incident; these change incidents, so they sit above it and the open
//! incidents). Each is an `impl Tracker` for now: the tracker's fields
//! are theirs to read and change.

mod endpoint;
mod host_silent;
mod kubelet_down;
mod node_status;
mod not_ready;
