"""The Streamlit app: main.py and launch.py (the transformer-viz command); pages/, frame/, session/, server/, rooms/."""
