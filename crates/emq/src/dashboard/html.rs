//! The dashboard's HTML: a page frame, escaping, tables and a throughput
//! chart drawn as SVG on the server. No JavaScript, no build step.

use std::fmt::Write;

/// Text made safe for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A whole page; `refresh` reloads it every that many seconds.
pub fn page(title: &str, refresh: Option<u32>, body: &str) -> String {
    let refresh = refresh.map_or(String::new(), |s| format!(r#"<meta http-equiv="refresh" content="{s}">"#));
    format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8">{refresh}
<title>{title} · EchoMQ</title><style>{STYLE}</style></head>
<body><header><a href="/">EchoMQ</a> <span>{title}</span></header><main>{body}</main></body></html>"#,
        title = escape(title)
    )
}

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:0;color:#222}\
header{background:#1d2b3a;color:#fff;padding:10px 20px}header a{color:#fff;font-weight:bold;text-decoration:none}\
header span{margin-left:12px;opacity:.8}main{padding:20px}table{border-collapse:collapse;margin:8px 0 20px}\
td,th{padding:4px 12px;border-bottom:1px solid #ddd;text-align:right}td:first-child,th:first-child{text-align:left}\
.dead{color:#b00020}form{display:inline}button{margin-left:4px}code{font-size:12px}\
pre{background:#f5f5f5;padding:8px;white-space:pre-wrap;max-width:900px}.none{color:#888}";

/// A table: a header row and body rows, cells already HTML.
pub fn table(id: &str, head: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!(r#"<table id="{id}"><tr>"#);
    for cell in head {
        let _ = write!(out, "<th>{}</th>", escape(cell));
    }
    out.push_str("</tr>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

/// A POST button for one job action, carrying the CSRF token.
pub fn action(queue: &str, id: &str, action: &str, csrf: &str) -> String {
    format!(
        r#"<form method="post" action="/queues/{q}/jobs/{id}/{action}"><input type="hidden" name="csrf" value="{csrf}"><button class="{action}" type="submit">{action}</button></form>"#,
        q = urlencode(queue),
        id = escape(id),
        csrf = escape(csrf),
    )
}

/// A path segment, percent-encoded (queue names may hold any byte but braces and NUL).
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

/// Jobs finished per second over time, as an SVG line.
pub fn chart(rates: &[f64]) -> String {
    let (width, height) = (600.0, 120.0);
    let top = rates.iter().copied().fold(1.0, f64::max);
    let step = width / (rates.len().max(2) - 1) as f64;
    let points: Vec<String> = rates
        .iter()
        .enumerate()
        .map(|(i, rate)| format!("{:.1},{:.1}", i as f64 * step, height - rate / top * (height - 10.0)))
        .collect();
    format!(
        r##"<svg id="throughput" width="{width}" height="{height}" viewBox="0 0 {width} {height}" style="background:#f7f9fb">
<polyline fill="none" stroke="#2b6cb0" stroke-width="2" points="{}"/>
<text x="4" y="14" font-size="11">{top:.0} jobs/s</text></svg>"##,
        points.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_encoding() {
        assert_eq!(escape(r#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
        assert_eq!(urlencode("a b/c:ü"), "a%20b%2Fc%3A%C3%BC");
    }
}
