//! The one integration test binary. Tests start the real components they
//! need themselves (journal files written by `systemd-journal-remote`,
//! `journalctl` for the export/json/text renderings).

mod alertmanager;
mod api;
mod architecture;
mod auth;
mod cli;
mod collector;
mod context;
mod control;
mod damage;
mod down;
mod email;
mod formats;
mod kernel;
mod not_ready;
mod not_ready_pastes;
mod pastes;
mod real_logs;
mod robustness;
mod sandbox;
mod service;
mod silent;
mod starts;
mod support;
mod time;
mod upgrade;
