"""Fengong's dashboard: routes to one thin page per screen (st.navigation).

Every run first syncs the session's scenario with the share link in the URL (`ui.state`), then
runs the page. The planner page (app_pages/planner.py) joins the navigation when it exists. The
pages live in app_pages/, not pages/: a pages/ folder would put Streamlit in its legacy
pages-folder mode until app.py first ran, and a deep link would run a page without app.py.
"""

from pathlib import Path

import streamlit as st

from ui import layout, state, styles

st.set_page_config(page_title="Fengong: LLM serving lab", page_icon="⚙️", layout="wide")
styles.inject()  # before anything is drawn: the popover buttons take clicks on themselves

state.sync_link()


def page(file: str, title: str, icon: str, url_path: str, **kw: object) -> st.Page:
    """A page of app_pages/ by file name, with a Material icon."""
    return st.Page(f"app_pages/{file}.py", title=title, icon=f":material/{icon}:", url_path=url_path, **kw)  # type: ignore[arg-type]


RESULTS = page("results", "Results", "monitoring", "home", default=True)
PAGES = [
    page("workload", "Workload mix", "stacked_line_chart", "workload"),
    page("hardware", "Hardware", "memory", "hardware"),
    page("strategy", "Strategy", "call_split", "strategy"),
    page("slo", "SLO targets", "timer", "slo"),
    RESULTS,
    page("compare", "Compare", "compare_arrows", "compare"),
]
if (Path(__file__).resolve().parent / "app_pages" / "planner.py").exists():
    PAGES.append(page("planner", "Planner", "travel_explore", "planner"))
PAGES.append(page("about", "About", "fact_check", "about"))


def to_results() -> None:
    """/results (typed, or an old link): go to the Results page at "/", keeping the share link and the
    page's own parameters (a link's `&seeds=3` opened /results on one seed)."""
    st.switch_page(
        RESULTS, query_params={**{k: str(st.query_params[k]) for k in st.query_params}, **state.link()}
    )


# Results, the default page, is served at "/"; /results redirects there so the navigation shows it.
PAGES.append(st.Page(to_results, title="Results", url_path="results", visibility="hidden"))

current = st.navigation(PAGES, position="top")
st.session_state[layout.PAGE] = current.url_path
if current.url_path != "planner" and "plan" in st.query_params:  # the Planner's form (ui.plan_link)
    del st.query_params["plan"]
current.run()
layout.refresh_share()
