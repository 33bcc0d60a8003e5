//! The dashboard's HTML: the page frame (its style, and the few lines of
//! script that apply `/live`'s updates), and the small pieces every page
//! uses. Templates are `maud`'s: every value is escaped unless marked.

use std::fmt::Write;
use std::time::{Duration, UNIX_EPOCH};

use maud::{html, Markup, PreEscaped, DOCTYPE};

/// A whole page: the header with its trail of links (`crumbs`: text and
/// path), then `body`.
pub fn page(title: &str, crumbs: &[(String, String)], body: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · EchoMQ" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    a.home href="/" { "EchoMQ" }
                    @for (text, path) in crumbs {
                        " / " a href=(path) { (text) }
                    }
                    span.tools { a #nav-workers href="/workers" { "workers" } " · " a href="" { "reload" } }
                }
                main { (body) }
                script { (PreEscaped(SCRIPT)) }
            }
        }
    }
}

/// The page of a refused or failed request: what, and why.
pub fn problem(title: &str, said: &str) -> Markup {
    page(title, &[], &html! { h1 { (title) } p #problem { (said) } p { a href="/" { "all queues" } } })
}

const STYLE: &str = "*{box-sizing:border-box}body{font:14px system-ui,sans-serif;margin:0;color:#222}\
header{background:#1d2b3a;color:#fff;padding:10px 16px;display:flex;flex-wrap:wrap;gap:4px;align-items:baseline}\
header a{color:#fff;text-decoration:none}header .home{font-weight:bold}.tools{margin-left:auto;opacity:.8}\
main{padding:16px;max-width:1400px}h1{font-size:20px;margin:4px 0 12px}h2{font-size:16px;margin:20px 0 8px}\
.scroll{overflow-x:auto;max-width:100%}table{border-collapse:collapse;margin:4px 0 16px;min-width:100%}\
td,th{padding:5px 8px;border-bottom:1px solid #e2e2e2;text-align:left;white-space:nowrap;vertical-align:top}\
th{background:#f4f6f8;font-weight:600}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\
td.wrap{white-space:normal;word-break:break-word;min-width:12em}td.flow{white-space:normal;min-width:7em}\
.dead,.bad{color:#b00020}.paused{color:#a15c00;font-weight:600}.none{color:#888}.note{color:#555}\
form.inline{display:inline}button{margin:2px;padding:3px 10px;cursor:pointer}\
button.danger{color:#fff;background:#b00020;border:1px solid #800}code{font-size:12px}\
pre{background:#f5f5f5;padding:8px;white-space:pre-wrap;word-break:break-word;max-height:480px;overflow:auto}\
.pager a,.pager span{margin-right:10px}.bar{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:8px 0}\
input[type=text],input[type=search]{padding:4px;max-width:100%}\
label{display:inline-block;margin:4px 12px 4px 0}\
svg.chart{display:block;width:100%;max-width:960px;height:140px;background:#fafbfc;border:1px solid #e2e2e2}\
svg.chart .hit{fill:transparent}svg.chart .completed{fill:#2e7d32}svg.chart .failed{fill:#c62828}\
svg.chart .axis{stroke:#999}.key-completed{color:#2e7d32}.key-failed{color:#c62828}\
td.unworked{font-weight:600}";

/// Opens `/live` while the tab is shown (closed while it is hidden) and
/// writes each value it sends into the elements whose `data-live` names it.
const SCRIPT: &str = "(function(){var s=null;\
function open(){if(s||document.hidden||!window.EventSource)return;s=new EventSource('/live');\
s.onmessage=function(e){var d=JSON.parse(e.data);document.querySelectorAll('[data-live]').forEach(function(el){\
var v=d[el.getAttribute('data-live')];if(v!==undefined)el.textContent=v;});};}\
function close(){if(s){s.close();s=null;}}\
document.addEventListener('visibilitychange',function(){if(document.hidden)close();else open();});open();})();";

/// A value `/live` keeps current: `key` is `<queue>/<what>`.
pub fn live(key: &str, value: &str) -> Markup {
    html! { span data-live=(key) { (value) } }
}

/// A table in a wrapper that scrolls sideways on a narrow screen.
pub fn scroll(table: &Markup) -> Markup {
    html! { div.scroll { (table) } }
}

/// The hidden field that carries the CSRF token.
pub fn csrf(token: &str) -> Markup {
    html! { input type="hidden" name="csrf" value=(token); }
}

/// A form of one button that POSTs to `action`.
pub fn button(action: &str, label: &str, class: &str, token: &str) -> Markup {
    html! {
        form.inline method="post" action=(action) {
            (csrf(token))
            button class=(class) type="submit" { (label) }
        }
    }
}

/// A page asking to confirm a write: what it does (`said`), and the form
/// that does it (`fields`: hidden name and value pairs, then
/// `confirmed=yes`), or a link back.
pub fn confirm(
    title: &str,
    said: &str,
    action: &str,
    fields: &[(&str, String)],
    token: &str,
    back: &str,
) -> Markup {
    let body = html! {
        h1 { (title) }
        p #confirm { (said) }
        form method="post" action=(action) {
            (csrf(token))
            @for (name, value) in fields {
                input type="hidden" name=(name) value=(value);
            }
            input type="hidden" name="confirmed" value="yes";
            button.danger #confirm-yes type="submit" { "yes, " (title.to_lowercase()) }
            " " a href=(back) { "no, go back" }
        }
    };
    page(title, &[], &body)
}

/// A path segment (or query value), percent-encoded: queue names may hold
/// any byte but braces and NUL.
pub fn urlencode(segment: &str) -> String {
    let mut out = String::new();
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// The path of queue `name`'s page, and of what is under it (`rest`: "" or "/…").
pub fn queue_path(name: &str, rest: &str) -> String {
    format!("/queues/{}{rest}", urlencode(name))
}

/// A server time, ms since the epoch, to the second (UTC).
pub fn when(ms: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// A queue's flow settings in a few words: `paused, concurrency 10, rate
/// 100/1s`, or `running` when none holds its claims back.
pub fn flow(settings: &echomq::Settings) -> String {
    match crate::flow::describe(settings) {
        none if none == "-" => "running".into(),
        said => said,
    }
}

/// A server time to the ms (UTC): events a few ms apart stay apart.
pub fn when_ms(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// An age in seconds as a person reads it (`3m 12s`), or `-` for none.
pub fn age(secs: Option<u64>) -> String {
    secs.map_or_else(|| "-".into(), |secs| humantime::format_duration(Duration::from_secs(secs)).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_escape_and_paths_encode() {
        let shown = problem("bad", r#"<a href="x">'&'</a>"#).into_string();
        assert!(shown.contains("&lt;a href=&quot;x&quot;&gt;'&amp;'&lt;/a&gt;"), "{shown}");
        assert!(!shown.contains(r#"<a href="x">"#), "{shown}");
        assert_eq!(urlencode("a b/c:ü"), "a%20b%2Fc%3A%C3%BC");
        assert_eq!(queue_path("a/b", "/state/dead"), "/queues/a%2Fb/state/dead");
        assert_eq!(age(Some(192)), "3m 12s");
        assert_eq!(age(None), "-");
    }
}
