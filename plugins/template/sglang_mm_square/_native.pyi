import numpy as np
import numpy.typing as npt

def process(
    image: npt.NDArray[np.uint8],
    size: int,
    mean: tuple[float, float, float],
    std: tuple[float, float, float],
    threads: int = 1,
) -> npt.NDArray[np.float32]: ...
