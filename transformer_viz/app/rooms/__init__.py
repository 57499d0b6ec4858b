"""Class rooms: the store (no Streamlit) and following the teacher."""
