//! The bulk actions of a state's page: retry or cancel the ticked jobs, or
//! all that match (the search's text, or the whole state), after a page
//! that says how many; then what was done. The walking and the changing
//! are `select.rs`'s.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Form, Path, State as Extract};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use echomq::{JobId, State};
use maud::{html, Markup};

use super::html::{self, queue_path};
use super::{queue_of, state_of, App, Problem, Write};
use crate::select::{self, Action, Applied, Selection};

/// How many jobs the confirmation of "all matching" counts at most.
const COUNT_BUDGET: u64 = 10_000;

/// The bulk buttons of a state's page: on the ticked jobs, or on all that
/// match (the search's text, or the whole state).
pub fn buttons(state: State, matching: Option<&str>) -> Markup {
    let all = if matching.is_some() { "all matching" } else { "all" };
    html! {
        div.bar #bulk-actions {
            @if let Some(text) = matching { input type="hidden" name="matching" value=(text); }
            @for action in [Action::Retry, Action::Cancel, Action::Delete] {
                @if action.takes(state) {
                    button name="do" value=(format!("{}-selected", action.verb())) type="submit" { (action.verb()) " selected…" }
                    button name="do" value=(format!("{}-all", action.verb())) type="submit" { (action.verb()) " " (all) "…" }
                }
            }
        }
    }
}

/// What a bulk form asks: the action, on which jobs.
struct BulkForm {
    action: Action,
    /// The ticked ids; `None`: all that match.
    ids: Option<Vec<JobId>>,
    matching: Option<String>,
    confirmed: bool,
}

impl BulkForm {
    /// Read the form's fields (repeated `ids`); anything malformed is refused, naming it.
    fn read(fields: &[(String, String)]) -> Result<BulkForm, Problem> {
        let one = |name: &str| fields.iter().find(|(field, _)| field == name).map(|(_, value)| value.clone());
        let ask = one("do").unwrap_or_default();
        let (verb, scope) = ask.split_once('-').unwrap_or((ask.as_str(), ""));
        let action = match verb {
            "retry" => Action::Retry,
            "cancel" => Action::Cancel,
            "delete" => Action::Delete,
            _ => {
                return Err(Problem::BadInput(format!(
                    "{ask:?} is not a bulk action: retry, cancel or delete, selected or all"
                )))
            }
        };
        let ids = match scope {
            "selected" => {
                let ids = fields
                    .iter()
                    .filter(|(field, _)| field == "ids")
                    .map(|(_, id)| super::job_id(id))
                    .collect::<Result<Vec<_>, _>>()?;
                if ids.is_empty() {
                    return Err(Problem::BadInput("no job was ticked: tick some, or act on all".into()));
                }
                Some(ids)
            }
            "all" => None,
            _ => {
                return Err(Problem::BadInput(format!(
                    "{ask:?} is not a bulk action: retry or cancel, selected or all"
                )))
            }
        };
        Ok(BulkForm {
            action,
            ids,
            matching: one("matching").filter(|text| !text.is_empty()),
            confirmed: one("confirmed").as_deref() == Some("yes"),
        })
    }

    /// The fields that carry it through its confirmation.
    fn fields(&self) -> Vec<(&'static str, String)> {
        let scope = if self.ids.is_some() { "selected" } else { "all" };
        let mut fields = vec![("do", format!("{}-{scope}", self.action.verb()))];
        if let Some(text) = &self.matching {
            fields.push(("matching", text.clone()));
        }
        for id in self.ids.iter().flatten() {
            fields.push(("ids", id.to_string()));
        }
        fields
    }
}

/// Retry or cancel the ticked jobs, or all that match: first a page that
/// says how many and asks, then the change, then what it did.
pub async fn bulk(
    Extract(app): Extract<Arc<App>>,
    Path((name, state)): Path<(String, String)>,
    remote: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(fields): Form<Vec<(String, String)>>,
) -> Result<Response, Problem> {
    let csrf = fields.iter().find(|(field, _)| field == "csrf").map(|(_, value)| value.as_str());
    app.may_write(&Write::new(remote, "bulk", &name), &headers, csrf)?;
    let form = BulkForm::read(&fields)?;
    queue_of(&app, &name)?;
    let state = state_of(&state)?;
    form.action.check(state).map_err(|refused| Problem::BadInput(refused.to_string()))?;
    let selection = Selection { queue: name.clone(), state, matching: form.matching.clone() };
    let write = match &form.ids {
        Some(ids) => Write::new(remote, form.action.verb(), &name).jobs(ids),
        None => Write::new(remote, form.action.verb(), &name).all(&selection.describe()),
    };
    let back = queue_path(&name, &format!("/state/{state}"));
    let verb = form.action.verb();
    if !form.confirmed {
        let said = question(&app, &form, &selection).await?;
        let title = format!("{} jobs", capitalized(verb));
        let action = queue_path(&name, &format!("/state/{state}/bulk"));
        return Ok(html::confirm(&title, &said, &action, &form.fields(), &app.csrf, &back).into_response());
    }
    let done = match &form.ids {
        Some(ids) => select::apply_ids(&app.executor, &name, state, ids, form.action).await,
        None => select::apply_all(&app.executor, &mut app.conn.clone(), &selection, form.action).await,
    };
    let applied = write.logged(&app, done.map_err(Problem::from), |a: &Applied| {
        format!(
            "done: {} {}, {} skipped, {} failed",
            a.changed,
            form.action.done(),
            a.skipped,
            a.failed.len()
        )
    })?;
    let body = applied_body(form.action, &applied, state, &back);
    Ok(html::page(&format!("{verb} · {name}"), &[(name.clone(), queue_path(&name, ""))], &body)
        .into_response())
}

/// What the confirmation asks: how many ticked jobs, or how many match
/// (counted up to [`COUNT_BUDGET`]: past it, at least how many).
async fn question(app: &App, form: &BulkForm, selection: &Selection) -> Result<String, Problem> {
    let (verb, state, name) = (form.action.verb(), selection.state, &selection.queue);
    Ok(match &form.ids {
        Some(ids) => format!("{verb} the {} ticked {state} job(s) of {name}?", ids.len()),
        None => {
            let count = select::count(&mut app.conn.clone(), selection, COUNT_BUDGET).await?;
            if count.exact {
                format!("{verb} all {} {}?", count.n, selection.describe())
            } else {
                format!(
                    "{verb} all {}? At least {} (found among the newest {} of {}; the rest are looked at as it goes).",
                    selection.describe(),
                    count.n,
                    count.examined,
                    count.total
                )
            }
        }
    })
}

/// The page of what a bulk `action` on `state`'s jobs did: how many
/// changed, skipped and refused, and why each was refused.
fn applied_body(action: Action, applied: &Applied, state: State, back: &str) -> Markup {
    html! {
        h1 { (capitalized(action.done())) " " (applied.changed) " job(s)" }
        p #applied {
            (applied.changed) " " (action.done()) ", " (applied.skipped)
            " skipped (no longer " (state) ", or already so), " (applied.failed.len()) " refused."
        }
        @if !applied.failed.is_empty() {
            (html::scroll(&html! {
                table #refused {
                    tr { th { "job" } th { "why" } }
                    @for (id, why) in &applied.failed { tr { td { code { (id) } } td.wrap { (why) } } }
                }
            }))
        }
        p { a href=(back) { "back to the " (state) " jobs" } }
    }
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| first.to_uppercase().chain(chars).collect())
}
