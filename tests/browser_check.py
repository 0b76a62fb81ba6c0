#!/usr/bin/python3
"""Opens an mpiadvise HTML report in headless Chromium (Debian's chromium and chromium-driver, through
Selenium) and prints, as one JSON object, what a test needs to check it: the console messages, the data
of every chart as Chart.js holds it, the texts of the hot spots and advice, whether any script from the
job ran (window.mpaPwned), and the page's size. Writes a screenshot of the whole page to SCREENSHOT.

usage: browser_check.py PAGE.html SCREENSHOT.png
"""
import json
import shutil
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

page, shot = sys.argv[1], sys.argv[2]
options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
profile = tempfile.mkdtemp(prefix="mpiadvise-chromium-")
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
          "--user-data-dir=" + profile):
    options.add_argument(a)
options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    started = time.monotonic()
    driver.get("file://" + page)
    ready = False
    for _ in range(200):
        if driver.execute_script("return window.mpaReady === true"):
            ready = True
            break
        time.sleep(0.05)
    rendered_s = time.monotonic() - started
    charts = driver.execute_script("""
      const out = {};
      for (const [name, c] of Object.entries(window.mpaCharts || {})) {
        out[name] = {canvas: c.canvas.id, width: c.width, height: c.height, labels: c.data.labels || [],
                     datasets: c.data.datasets.map(d => ({label: d.label, data: d.data}))};
      }
      return out;""")
    texts = driver.execute_script("""
      const t = s => Array.from(document.querySelectorAll(s)).map(e => e.textContent);
      return {hot_spots: t('#hot-spots td'), advice: t('#advice .advice'), facts: t('#job td'), dir: t('#dir'),
              sections: t('h2'), timeline_rows: window.mpaCharts.timeline ? window.mpaCharts.timeline.data.labels.length : 0};""")
    pwned = driver.execute_script("return window.mpaPwned === undefined ? null : window.mpaPwned")
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(1280, min(max(900, height + 40), 8000))
    driver.save_screenshot(shot)
    # the timeline zooms: the x axis's range after one click on "zoom in"
    zoom = driver.execute_script("""
      const c = window.mpaCharts.timeline;
      if (!c) return null;
      const before = [c.scales.x.min, c.scales.x.max];
      Array.from(document.querySelectorAll('#timeline button')).find(b => b.textContent === 'zoom in').click();
      return {before: before, after: [c.scales.x.min, c.scales.x.max]};""")
    logs = [{"level": e["level"], "message": e["message"]} for e in driver.get_log("browser")]
    print(json.dumps({"ready": ready, "rendered_s": rendered_s, "console": logs, "charts": charts, "texts": texts,
                      "zoom": zoom, "pwned": pwned, "height": height}))
finally:
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)
