import numpy as np
import numpy.typing as npt

def letterbox(
    image: npt.NDArray[np.uint8],
    size: int,
    content: tuple[int, int],
    offset: tuple[int, int],
    fill: tuple[int, int, int],
    mean: tuple[float, float, float],
    std: tuple[float, float, float],
    *,
    codes: bool,
    threads: int,
) -> npt.NDArray[np.float32] | npt.NDArray[np.uint8]: ...
