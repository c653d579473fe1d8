__version__ = "0.1.0"
#: The project's home, as ``[project.urls]`` gives it (a test holds the two equal).
HOME = "https://github.com/roadcheck/roadcheck"
