"""The HTML report (``make report``) opened in headless Chromium: every table and figure of the
toy configuration is listed under its category with its title, each table's page shows its
title, each caption carries the table's notes, and the page loads nothing from a network.

Chromium and its driver are Debian's ``chromium`` and ``chromium-driver`` (.ci/run installs
them). Without them the browser tests are skipped with that reason, unless
``HYBRID_IR_REQUIRE_BROWSER=1`` (set by .ci/run) turns the skip into a failure.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from toy_workflow import make_toy, snakemake

from hybrid_ir.reports.html_report import BEYOND, category, paper_category

pytestmark = pytest.mark.lucene

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
BROWSER_FLAGS = (
    "--headless=new",
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-extensions",
    "--window-size=1400,1000",
)


PAPER = "003"
"""The toy table and figure are filed under this paper, so that its category holds two results,
the case where Snakemake's report once took a label for a toggle and broke the page."""


@pytest.fixture(scope="module")
def toy_report(tmp_path_factory) -> tuple[Path, dict]:
    """The toy workflow run, then its report written; the root and its configuration, whose
    table and figure are renamed after paper :data:`PAPER`."""
    root = make_toy(tmp_path_factory.mktemp("report"))
    config = yaml.safe_load((root / "config.yaml").read_text())
    for section in ("tables", "figures"):
        config[section] = {f"paper{PAPER}-{name}": entry for name, entry in config[section].items()}
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(root)
    assert result.returncode == 0, result.stderr[-4000:]
    report = snakemake(root, "--report", "results/report.html")
    assert report.returncode == 0, report.stderr[-4000:]
    return root, yaml.safe_load((root / "config.yaml").read_text())


@pytest.fixture(scope="module")
def browser():
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not shutil.which(path)]
    if missing:
        reason = f"no headless browser: {', '.join(missing)} (Debian chromium, chromium-driver)"
        if os.environ.get("HYBRID_IR_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in BROWSER_FLAGS:
        options.add_argument(flag)
    # An explicit driver: Selenium Manager would otherwise look for one on the internet.
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    yield driver
    driver.quit()


def expected_results(root: Path, config: dict) -> dict[str, str]:
    """Name -> title of every table and figure the report must show."""
    titles = {name: entry.get("title", name) for name, entry in config["tables"].items()}
    titles["bm25"] = "BM25 baselines"
    titles.update({name: entry.get("title", name) for name, entry in config["figures"].items()})
    return titles


def open_results(driver, report: Path, name: str | None = None):
    """The report's results; with ``name``, the category page that lists it."""
    from selenium.webdriver.common.by import By

    driver.get(report.as_uri())
    driver.find_element(By.XPATH, "//*[text()='Results']").click()
    if name is not None:
        driver.find_element(By.XPATH, f"//*[text()={category(name)!r}]").click()


def result_row(driver, name: str):
    from selenium.webdriver.common.by import By

    return driver.find_element(By.XPATH, f"//tr[td[text()={name!r}]]")


def test_report_lists_every_table_and_figure_under_its_paper_with_its_title(toy_report, browser):
    from selenium.webdriver.common.by import By

    root, config = toy_report
    titles = expected_results(root, config)
    report = root / "results" / "report.html"
    assert {category(name) for name in titles} == {paper_category(PAPER), BEYOND}
    for name, title in titles.items():
        open_results(browser, report, name)
        row = result_row(browser, name)
        row.find_element(By.CSS_SELECTOR, "a[iconname='information-circle']").click()
        caption = browser.find_element(By.TAG_NAME, "body").text
        assert title in caption, (name, caption[:1000])
    # Nothing was fetched from a network: every resource the page loaded is inline or local.
    resources = browser.execute_script(
        "return performance.getEntriesByType('resource').map(entry => entry.name)"
    )
    assert [url for url in resources if not url.startswith(("data:", "file:", "blob:"))] == []
    assert "http://" not in browser.page_source.split("<body", 1)[0].replace("http://www.w3", "")


def test_each_table_page_shows_its_title_and_its_caption_the_notes(toy_report, browser):
    from selenium.webdriver.common.by import By

    root, config = toy_report
    report = root / "results" / "report.html"
    tables = {name: entry.get("title", name) for name, entry in config["tables"].items()}
    tables["bm25"] = "BM25 baselines"
    for name, title in tables.items():
        open_results(browser, report, name)
        result_row(browser, name).find_element(By.CSS_SELECTOR, "a[iconname='eye']").click()
        frame = browser.find_element(By.TAG_NAME, "iframe")
        browser.switch_to.frame(frame)
        page = browser.find_element(By.TAG_NAME, "body").text
        browser.switch_to.default_content()
        assert title in page, (name, page[:500])
        assert "configuration sha256" in page  # the provenance footer
        notes = (root / "results" / "tables" / f"{name}.md").read_text().splitlines()
        last_note = [line for line in notes if line.startswith("- ")][-1][2:]

        open_results(browser, report, name)
        row = result_row(browser, name)
        row.find_element(By.CSS_SELECTOR, "a[iconname='information-circle']").click()
        caption = browser.find_element(By.TAG_NAME, "body").text
        assert title in caption
        # The caption is the table's notes, rendered from the same Markdown.
        assert last_note.replace("`", "") in caption, (name, last_note, caption[-1500:])


def test_figures_show_as_images(toy_report, browser):
    from selenium.webdriver.common.by import By

    root, config = toy_report
    for name in config["figures"]:
        open_results(browser, root / "results" / "report.html", name)
        result_row(browser, name).find_element(By.CSS_SELECTOR, "a[iconname='eye']").click()
        image = browser.find_element(By.CSS_SELECTOR, "img[src^='data:image/png']")
        assert browser.execute_script("return arguments[0].naturalWidth", image) > 100
