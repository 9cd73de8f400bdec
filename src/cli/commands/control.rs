//! The commands that change what is delivered: `silence add|list|expire`
//! and `ack`. Over the socket the service records who from the
//! connection; with the service stopped the CLI writes the store itself,
//! as the calling user.

use std::io::Write;
use std::path::PathBuf;

use super::query::{ask_or_read, show};
use crate::api::Request;
use crate::cli::args::Exit;
use crate::cli::args::{Output, SilenceCmd};
use crate::cli::{load_for_query, render};
use crate::query::{self, AckRequest, NewSilence, SilenceList, SilenceOut};
use crate::report::IncidentOut;
use sentinel_core::time::SECOND;

/// The calling user's name: the author when the CLI writes the store
/// itself (the service stopped). Over the socket the service takes it
/// from the connection's credentials instead.
fn caller() -> String {
    crate::api::peer::current_user()
}

/// `silence add|list|expire`.
pub(crate) fn silence(
    config_path: Option<&PathBuf>,
    action: SilenceCmd,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let config = load_for_query(config_path, err);
    let done = match action {
        SilenceCmd::Add {
            node,
            cause,
            kind,
            duration,
            comment,
        } => {
            let n = NewSilence {
                node: node.unwrap_or_else(|| "*".into()),
                cause,
                kind,
                seconds: (duration / SECOND).max(1) as u64,
                by: caller(),
                comment,
            };
            let req = Request::AddSilence(n.clone());
            ask_or_read::<SilenceOut>(&config, &req, |s| query::silences::add(s, None, &n))
                .map(|a| show(&a, Output::Table, render::silence_added, out))
        }
        SilenceCmd::List { output, utc } => {
            let zone = crate::clock::zone(utc);
            ask_or_read::<SilenceList>(&config, &Request::Silences, |s| {
                query::silences::list(s, None)
            })
            .map(|l| show(&l, output, |l| render::silences(l, zone), out))
        }
        SilenceCmd::Expire { id } => {
            let req = Request::ExpireSilence(id.clone());
            ask_or_read::<SilenceOut>(&config, &req, |s| {
                query::silences::expire(s, None, &id, &caller())
            })
            .map(|e| show(&e, Output::Table, render::silence_expired, out))
        }
    };
    done.unwrap_or_else(|e| e.report(err))
}

/// `ack ID`.
pub(crate) fn ack(
    config_path: Option<&PathBuf>,
    id: String,
    comment: String,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let config = load_for_query(config_path, err);
    let a = AckRequest {
        id,
        by: caller(),
        comment,
    };
    let req = Request::Ack(a.clone());
    match ask_or_read::<IncidentOut>(&config, &req, |s| query::ack(s, None, &a)) {
        Ok(i) => show(&i, Output::Table, render::acknowledged, out),
        Err(e) => e.report(err),
    }
}
