// mpiadvise report --format html: one self-contained page. The report's JSON travels inside it as data
// (an application/json script element, '<', '>' and '&' written as JSON escapes so that no string of
// the job can close the element); Chart.js, as Debian packages it, and the page's script
// (cli/html/report.js) draw it. Nothing is fetched when the page is opened.
#include "commands.hpp"

#include <string>

#include "text_escape.hpp"

extern "C" {
extern const char mpa_chartjs[];
extern const char mpa_report_js[];
extern const char mpa_report_css[];
}

namespace mpiadvise::cli {

// A JSON text safe inside a <script> element: '<', '>' and '&' occur only inside its strings, where
// \u003c, \u003e and \u0026 stand for the same characters.
static std::string script_safe_json(const nlohmann::json& j) {
  const std::string text = dump_json(j);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (char c : text) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

std::string render_html(const report::Report& report) {
  std::string page;
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // the page loads nothing: no network, no other file
  page += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
          "style-src 'unsafe-inline'; img-src data:\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<meta name=\"generator\" content=\"" + report.generator + "\">\n";
  page += "<title>mpiadvise report</title>\n<style>\n";
  page += mpa_report_css;
  page += "</style>\n</head>\n<body>\n<h1>mpiadvise report</h1>\n<p class=\"sub\"><code id=\"dir\"></code></p>\n";
  page += "<noscript><p>This report draws its charts with JavaScript; mpiadvise report --format text prints the same "
          "findings.</p></noscript>\n<main id=\"main\"></main>\n";
  page += "<script type=\"application/json\" id=\"report-data\">";
  page += script_safe_json(report);
  page += "</script>\n<script>\n";
  page += mpa_chartjs;
  page += "\n</script>\n<script>\n";
  page += mpa_report_js;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace mpiadvise::cli
