pub mod journal;
pub mod parse;
pub mod time;
pub mod signals;
