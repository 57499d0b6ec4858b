"""One run of the app: page config, the shared sidebar and navigation — nothing else.

`streamlit run app.py` (from a checkout) and `transformer-viz` (the packaged `streamlit_app.py`) both call `main()`.
"""

from pathlib import Path

import streamlit as st

from transformer_viz.app.frame.link import link_notice, open_link, write_link
from transformer_viz.app.frame.narrow_window import narrow_window_notice
from transformer_viz.app.frame.navigation import all_pages, follow_pending_link
from transformer_viz.app.frame.presenter import presenter_frame
from transformer_viz.app.frame.sidebar import render_sidebar
from transformer_viz.app.frame.take_home import start_view, view_download
from transformer_viz.app.rooms.common import room_down_banner, room_news_banner
from transformer_viz.app.rooms.follow import follow_room, poll_teacher, room_panel, room_params
from transformer_viz.app.rooms.teach import room_badge, share_view
from transformer_viz.app.server import state
from transformer_viz.app.server.models import set_up_server
from transformer_viz.app.session.charts import ALTERNATIVE, VISUALLY_HIDDEN

# Room for the figures on a 1280x720 projector: a smaller title and less padding above it. A formula shrinks with
# its column (cqi: 1 % of it) where the widest one, 23 em, would not fit; KaTeX would hide the rest, so its box
# never scrolls (a scrolling box must take the keyboard's focus, which Streamlit's cannot). A figure's text
# alternative is read by screen readers, not drawn, and takes no room (absolute: out of the column's gaps).
PAGE_STYLE = ("<style>.block-container{padding-top:2.2rem} h1{font-size:2rem !important;padding-top:0}"
              f"[data-testid=stElementContainer]:has(.{ALTERNATIVE}){{{VISUALLY_HIDDEN}}}"
              "[data-testid=stMarkdown]:has(.katex-display){container-type:inline-size}"
              ".katex-display{overflow:visible !important} .katex-display > .katex{font-size:min(1.21em, 4.2cqi)}"
              "</style>")
# Text with a contrast of at least 4.5 on white (WCAG 2.1 AA): captions in the text colour at 78 % (Streamlit's own
# 60 % opacity is 3.9), a switched-off widget's label at 72 % (its 40 % is 2.3). !important: Streamlit's own rules
# are as specific and come later.
CONTRAST_STYLE = ("<style>[data-testid=stCaptionContainer]"
                  "{opacity:1 !important;color:rgba(47, 45, 43, 0.78) !important}"
                  "[data-testid=stWidgetLabel][disabled], [data-testid=stWidgetLabel][disabled] *"
                  "{color:rgba(47, 45, 43, 0.72) !important}</style>")
# Streamlit inlines a local SVG as a data: URL. A Material icon or an emoji shortcode would make every browser fetch
# the icon from fonts.gstatic.com: an error in a classroom without internet, each visit told to a third party.
FAVICON = Path(__file__).with_name("favicon.svg")


def main() -> None:
    """Draw the page the URL names, with the sidebar, the room and the take-home view."""
    st.set_page_config(page_title="transformer_viz", page_icon=str(FAVICON), layout="wide")
    st.session_state[state.FULL_RUN] = True  # until the end of this run (the room's poll tells its own runs apart)
    open_link()  # a session's first run: the view its link names, before anything reads the view
    st.html(PAGE_STYLE + CONTRAST_STYLE)
    set_up_server()
    current = st.navigation(all_pages())  # registers the pages, so that a page switch can name them
    follow_pending_link()
    follow_room(current.url_path)  # a student in a room: open the teacher's page and view if they changed
    room_section = st.sidebar.container()  # filled at the end of the run, when the room was sent this view
    poll_teacher(room_section)  # a following student's poll, first of all
    render_sidebar()
    presenter_frame()
    narrow_window_notice()  # shown by the browser only where the figures lack room
    room_badge()  # presenter mode hides the sidebar: the room's code stays one click away
    above_page = st.container(key=state.ROOM_BANNERS)  # what became of the room, said at the end of the run
    share_view()  # a teacher: the room gets the page and view now, while this page takes its time...
    start_view()
    current.run()
    link_notice()  # after the page: its widgets have read their part of the link by then
    share_view()  # ...and any change the page made
    room_panel(room_section)
    room_down_banner(above_page)
    room_news_banner(above_page)
    view_download(current.title)
    write_link(room_params())  # the address bar shows the view, however it was reached, and the room
    st.session_state[state.FULL_RUN] = False
